-- ratios/excluded: how many jobs that passed the filters could not count, by reason.
WITH eligible AS (
{{eligible}}
)
SELECT excluded_reason AS reason, count(*) AS jobs
FROM eligible
WHERE excluded_reason IS NOT NULL
GROUP BY excluded_reason
ORDER BY excluded_reason

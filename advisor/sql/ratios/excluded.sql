-- ratios/excluded: how many jobs that passed the filters could not count, by reason.
WITH facts AS (
{{facts}}
)
SELECT excluded_reason AS reason, sum(jobs) AS jobs
FROM facts
WHERE excluded_reason IS NOT NULL
GROUP BY excluded_reason
ORDER BY excluded_reason

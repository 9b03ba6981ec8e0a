-- usage/medians: the median job's CPU efficiency per group of usage/facts.sql (the facts
-- placeholder), for the groupings of usage/summary.sql (same placeholders, same _set), over
-- the jobs with CPU usage only (the median of the others' NULL is NULL): what
-- usage/summary_months.sql cannot sum. A group without such a job has no row.
WITH f AS (
{{facts}}
)
SELECT {{grouping}} AS _set, {{keys}}
    median(cpu_efficiency) AS cpu_efficiency_p50
FROM f
WHERE has_cpu_usage
GROUP BY GROUPING SETS ({{sets}})

-- usage/starved_months_refresh: fill usage_starved_months from usage/facts.sql (the facts
-- placeholder, bound with no filter and the default thresholds), beside usage/months_refresh.sql
-- in the cube rebuild's transaction. The sums are usage/starved_mix.sql's, per month.
INSERT INTO usage_starved_months
SELECT cluster, "partition", gpu_type, CAST(date_trunc('month', start) AS DATE) AS month,
       cpus, gpus, count(*) AS jobs,
       sum(gpu_hours) AS gpu_hours,
       sum(greatest(coalesce(elapsed_s, 0), 0)) AS elapsed_s
FROM (
{{facts}}
) AS f
WHERE verdict = 'starved' AND gpus > 0
GROUP BY ALL
ORDER BY month

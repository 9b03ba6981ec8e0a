-- usage/starved_mix: the jobs of usage/facts.sql (the facts placeholder) whose usage looks
-- starved, one row per place and shape (cluster, partition, GPU type, CPUs, GPUs) with their
-- count, GPU-hours and elapsed seconds summed: the rows the loss model evaluates. Jobs of one
-- shape lose the same share, so the sums give the loss of every job without a row a job in
-- Python. {{month}}: empty, or the month of start as a column (and a trailing comma) for
-- usage_starved_months (usage/starved_months_refresh.sql).
SELECT cluster, "partition", gpu_type, {{month}}cpus, gpus,
       count(*) AS jobs,
       sum(gpu_hours) AS gpu_hours,
       sum(greatest(coalesce(elapsed_s, 0), 0)) AS elapsed_s
FROM (
{{facts}}
) AS f
WHERE verdict = 'starved' AND gpus > 0
GROUP BY ALL
ORDER BY ALL

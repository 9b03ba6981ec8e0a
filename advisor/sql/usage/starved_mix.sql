-- usage/starved_mix: the jobs of usage/facts.sql (the facts placeholder) whose usage looks
-- starved, one row per place and shape (cluster, partition, GPU type, CPUs, GPUs) with their
-- GPU-hours and elapsed seconds summed: the rows the loss model evaluates. Jobs of one shape
-- lose the same share, so the sums give the loss of every job without a row a job in Python.
SELECT cluster, "partition", gpu_type, cpus, gpus,
       sum(gpu_hours) AS gpu_hours,
       sum(greatest(coalesce(elapsed_s, 0), 0)) AS elapsed_s
FROM (
{{facts}}
) AS f
WHERE verdict = 'starved' AND gpus > 0
GROUP BY ALL
ORDER BY ALL

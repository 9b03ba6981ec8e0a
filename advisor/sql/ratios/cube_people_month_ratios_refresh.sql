-- ratios/cube_people_month_ratios_refresh: build ratio_cube_people_month_ratios from the freshly
-- built rows of ratio_cube_people_months ({{months}}: all of them, or those of the changed
-- slices; same transaction, after emptying them): states, interactive labels and GPU counts
-- summed away, each (GPUs, CPUs) pair replaced by its ratio (the expression of
-- ratios/jobs_facts), stored in month order like its source.
INSERT INTO ratio_cube_people_month_ratios
SELECT pid, month, cpus::DOUBLE / gpus, excluded_reason, sum(jobs), sum(gpu_seconds)
FROM {{months}}
GROUP BY ALL
ORDER BY month, pid

-- ratios/cube_people_month_ratios_refresh: build ratio_cube_people_month_ratios from the freshly
-- built ratio_cube_people_months (same transaction, after emptying it): states, interactive
-- labels and GPU counts summed away, each (GPUs, CPUs) pair replaced by its ratio (the
-- expression of ratios/jobs_facts), stored in month order like its source.
INSERT INTO ratio_cube_people_month_ratios
SELECT pid, month, cpus::DOUBLE / gpus, excluded_reason, sum(jobs), sum(gpu_seconds)
FROM ratio_cube_people_months
GROUP BY ALL
ORDER BY month, pid

-- usage/model_cells: jobs with CPU usage and a verdict, counted per (GPU type, GPUs, cores per
-- GPU, saturated), the cells the model is asked about once each (advisor.usage.model_agreement).
-- Saturated: CPU efficiency >= $starved_cpu_eff. Parameters: those of usage/facts.sql.
WITH f AS (
{{facts}}
)
SELECT gpu_type, gpus, round(cores_per_gpu, 3) AS cores_per_gpu,
    cpu_efficiency >= $starved_cpu_eff AS saturated, count(*) AS n
FROM f
WHERE has_cpu_usage AND coalesce(elapsed_s, 0) >= $min_elapsed_s
GROUP BY ALL
ORDER BY ALL

-- GPU types of GPU jobs with job counts and GPU-hours, and one raw name as an example.
SELECT gpu_type, count(*) AS jobs,
       coalesce(sum(gpus * elapsed_s) / 3600.0, 0) AS gpu_hours,
       any_value(gpu_type_raw) AS example_raw
FROM jobs
WHERE gpus > 0
GROUP BY gpu_type
ORDER BY jobs DESC;

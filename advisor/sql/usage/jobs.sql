-- usage/jobs: per job of usage/facts.sql (the facts placeholder), those of one verdict
-- ($verdict, NULL = any), the most GPU-hours first, at most $lim (NULL = all).
SELECT *
FROM (
{{facts}}
) AS f
WHERE ($verdict IS NULL OR verdict = $verdict)
ORDER BY gpu_hours DESC, cluster, job_id_raw
LIMIT coalesce($lim, 9223372036854775807)

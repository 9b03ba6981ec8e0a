-- ratios/cube_people_months_refresh: build ratio_cube_people_months from jobs and the current
-- ratio_people (inside a transaction, after emptying it): per (pid, month, state, interactive,
-- GPUs, CPUs, exclusion reason) the job count and GPU-seconds, stored in month order so that a
-- time range reads only its row groups. Built on the first query that needs it
-- (advisor.ratios.refresh_people_months), not in every rebuild: it is by far the largest cube
-- (1.7M rows for 4.65M synthetic jobs).
INSERT INTO ratio_cube_people_months
SELECT p.pid, f.month, f.state, f.interactive, f.gpus, f.cpus, f.excluded_reason, f.n, f.w
FROM (
    SELECT cluster, gpu_type, "partition", account, "user", month, state, interactive, gpus, cpus,
           excluded_reason, count(*) AS n, coalesce(sum(w), 0) AS w
    FROM (
{{jobs}}
    ) AS j
    GROUP BY ALL
) AS f
JOIN ratio_people AS p
  ON p.cluster IS NOT DISTINCT FROM f.cluster
 AND p.gpu_type IS NOT DISTINCT FROM f.gpu_type
 AND p."partition" IS NOT DISTINCT FROM f."partition"
 AND p.account IS NOT DISTINCT FROM f.account
 AND p."user" IS NOT DISTINCT FROM f."user"
ORDER BY f.month, f.state, p.pid

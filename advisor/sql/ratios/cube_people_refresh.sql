-- ratios/cube_people_refresh: rebuild ratio_cube_people from jobs (inside the transaction of
-- ratios/cube_refresh, after DELETE FROM ratio_cube_people). Same rules as ratios/jobs_facts.
INSERT INTO ratio_cube_people
SELECT
    j.cluster,
    coalesce(j.gpu_type, '(untyped)'),
    j."partition",
    j.account,
    j."user",
    j.gpus,
    j.cpus,
    CASE
        WHEN j.start IS NULL THEN 'never_started'
        WHEN coalesce(j.gpus, 0) <= 0 THEN 'no_gpus'
        WHEN coalesce(j.cpus, 0) <= 0 THEN 'no_cpus'
    END AS excluded_reason,
    count(*),
    coalesce(sum(j.gpus::BIGINT * greatest(coalesce(j.elapsed_s, 0), 0)), 0)
FROM jobs AS j
GROUP BY ALL

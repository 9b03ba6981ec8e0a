-- ratios/cube_people_refresh: rebuild ratio_people, ratio_cube_people_months and
-- ratio_cube_people from the TEMP table of ratios/cube_fine (inside the rebuild's transaction,
-- after the three tables were emptied). People are numbered in the order of their names.
INSERT INTO ratio_people
SELECT row_number() OVER (ORDER BY cluster, gpu_type, "partition", account, "user")::INTEGER,
       cluster, gpu_type, "partition", account, "user"
FROM (SELECT DISTINCT cluster, gpu_type, "partition", account, "user" FROM _ratio_fine);

INSERT INTO ratio_cube_people_months
SELECT p.pid, f.month, f.state, f.interactive, f.gpus, f.cpus, f.excluded_reason, f.n, f.w
FROM _ratio_fine AS f
JOIN ratio_people AS p
  ON p.cluster IS NOT DISTINCT FROM f.cluster
 AND p.gpu_type IS NOT DISTINCT FROM f.gpu_type
 AND p."partition" IS NOT DISTINCT FROM f."partition"
 AND p.account IS NOT DISTINCT FROM f.account
 AND p."user" IS NOT DISTINCT FROM f."user"
ORDER BY f.month, f.state, p.pid;  -- month order: a time range reads only its row groups

INSERT INTO ratio_cube_people
SELECT pid, gpus, cpus, excluded_reason, sum(n), sum(w)
FROM ratio_cube_people_months
GROUP BY ALL
ORDER BY pid;

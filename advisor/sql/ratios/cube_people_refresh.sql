-- ratios/cube_people_refresh: rebuild ratio_people and ratio_cube_people from the TEMP table of
-- ratios/cube_fine (inside the rebuild's transaction, after both were emptied). People are
-- numbered in the order of their names. ratio_cube_people_months is left empty (and stale):
-- it is built on first use (ratios/cube_people_months_refresh).
INSERT INTO ratio_people
SELECT row_number() OVER (ORDER BY cluster, gpu_type, "partition", account, "user")::INTEGER,
       cluster, gpu_type, "partition", account, "user"
FROM (SELECT DISTINCT cluster, gpu_type, "partition", account, "user" FROM _ratio_fine
      WHERE people);

INSERT INTO ratio_cube_people
SELECT p.pid, f.gpus, f.cpus, f.excluded_reason, f.n, f.w
FROM _ratio_fine AS f
JOIN ratio_people AS p
  ON p.cluster IS NOT DISTINCT FROM f.cluster
 AND p.gpu_type IS NOT DISTINCT FROM f.gpu_type
 AND p."partition" IS NOT DISTINCT FROM f."partition"
 AND p.account IS NOT DISTINCT FROM f.account
 AND p."user" IS NOT DISTINCT FROM f."user"
WHERE f.people
ORDER BY p.pid;

-- ratios/cube_people_refresh: rebuild ratio_people and ratio_cube_people from the TEMP table of
-- ratios/cube_fine (inside the rebuild's transaction, after both were emptied). People are
-- numbered in the order of their names. ratio_cube_people_months is left empty (and stale):
-- it is built on first use (ratios/cube_people_months_refresh). Each column's id is the rank
-- of its value among that column's distinct values (ORDER BY's default order: NULL last).
INSERT INTO ratio_people (pid, cluster, gpu_type, "partition", account, "user", cluster_id,
                          gpu_type_id, partition_id, account_id, user_id)
SELECT row_number() OVER (ORDER BY cluster, gpu_type, "partition", account, "user")::INTEGER,
       cluster, gpu_type, "partition", account, "user",
       dense_rank() OVER (ORDER BY cluster)::INTEGER,
       dense_rank() OVER (ORDER BY gpu_type)::INTEGER,
       dense_rank() OVER (ORDER BY "partition")::INTEGER,
       dense_rank() OVER (ORDER BY account)::INTEGER,
       dense_rank() OVER (ORDER BY "user")::INTEGER
FROM (SELECT DISTINCT cluster, gpu_type, "partition", account, "user" FROM _ratio_fine
      WHERE people);

INSERT INTO ratio_cube_people
SELECT p.pid, f.gpus, f.cpus, f.excluded_reason, f.jobs, f.gpu_seconds
FROM _ratio_fine AS f
JOIN ratio_people AS p
  ON p.cluster IS NOT DISTINCT FROM f.cluster
 AND p.gpu_type IS NOT DISTINCT FROM f.gpu_type
 AND p."partition" IS NOT DISTINCT FROM f."partition"
 AND p.account IS NOT DISTINCT FROM f.account
 AND p."user" IS NOT DISTINCT FROM f."user"
WHERE f.people
ORDER BY p.pid;

-- ratios/cube_people_refresh: number the people of the TEMP table of ratios/cube_fine into
-- ratio_people (inside the rebuild's transaction, after emptying it), in the order of their
-- names; ratios/cube_people_cube_refresh then fills ratio_cube_people. Each column's id is the
-- rank of its value among that column's distinct values (ORDER BY's default order: NULL last).
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

-- ratios/inmemory_people: every pid of ratio_people with the ids of its key values (their names:
-- ratios/people_names) and its node type's fair share (NULL where the inventory has none), for
-- advisor.ratios.inmemory.
SELECT p.pid, p.cluster_id, p.gpu_type_id, p.partition_id, p.account_id, p.user_id,
       fair.fair_share_cores_per_gpu
FROM ratio_people AS p
LEFT JOIN ratio_fair_share AS fair USING (cluster, gpu_type)
ORDER BY p.pid

-- Per-dimension integer ids of each ratio_people row: the rank of its cluster, GPU type,
-- partition, account and user among the distinct values of that column (in sort order, NULL
-- last). A query that groups people by some of those columns then numbers its groups by
-- arithmetic on the ids, in the order of the names, instead of grouping every pid by strings
-- (advisor.ratios.below_target ranks 200k+ user/partition/GPU-type groups this way). Filled by
-- the cube rebuild; advisor.ratios' CUBE_RULES_VERSION 4 makes a cube built before read stale.
ALTER TABLE ratio_people ADD COLUMN cluster_id INTEGER;
ALTER TABLE ratio_people ADD COLUMN gpu_type_id INTEGER;
ALTER TABLE ratio_people ADD COLUMN partition_id INTEGER;
ALTER TABLE ratio_people ADD COLUMN account_id INTEGER;
ALTER TABLE ratio_people ADD COLUMN user_id INTEGER;

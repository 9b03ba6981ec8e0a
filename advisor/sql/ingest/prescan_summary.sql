-- What prescan.sql found in a file (temp prescan_groups), as one row.
SELECT
    coalesce(sum(n), 0) AS records,
    coalesce(sum(n) FILTER (WHERE is_step), 0) AS steps,
    list(DISTINCT cl) FILTER (WHERE NOT is_step AND cl IS NOT NULL) AS clusters,
    min(lo) FILTER (WHERE NOT is_step) AS first_submit,
    max(hi) FILTER (WHERE NOT is_step) AS last_submit,
    -- the GPU type names come from these few distinct strings (bulk.py parses them)
    list(DISTINCT typed) FILTER (WHERE typed IS NOT NULL) AS typed_tres,
    list(DISTINCT gres) FILTER (WHERE gres IS NOT NULL) AS alloc_gres
FROM prescan_groups

-- nodes/count_existing: how many of these (cluster, node name) pairs are already known.
-- Parameters: two VARCHAR[] of equal length (clusters, node names), pairs without repeats.
SELECT count(*)
FROM nodes AS n
JOIN (SELECT unnest(?::VARCHAR[]) AS cluster, unnest(?::VARCHAR[]) AS node_name) AS k
  ON n.cluster = k.cluster AND n.node_name = k.node_name

-- ratios/cube_slices_differ: the slices whose job count or checksum differ from derived_slices
-- (the {{which}} of ratios/cube_slices_changed), with their job count now (0: no job left).
SELECT coalesce(n.cluster, s.cluster) AS cluster,
       coalesce(n.month, s.month) AS month,
       coalesce(n.jobs, 0) AS jobs
FROM _slices_now AS n
FULL OUTER JOIN derived_slices AS s
  ON s.cluster IS NOT DISTINCT FROM n.cluster AND s.month IS NOT DISTINCT FROM n.month
WHERE n.jobs IS DISTINCT FROM s.jobs OR n.checksum IS DISTINCT FROM s.checksum

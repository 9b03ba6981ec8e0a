-- ratios/cube_slices_store: record what the changed slices were built from (after
-- ratios/cube_slices_delete emptied them in derived_slices).
INSERT INTO derived_slices
SELECT n.cluster, n.month, n.jobs, n.checksum
FROM _slices_now AS n
SEMI JOIN _slices_changed AS c
  ON c.cluster IS NOT DISTINCT FROM n.cluster AND c.month IS NOT DISTINCT FROM n.month

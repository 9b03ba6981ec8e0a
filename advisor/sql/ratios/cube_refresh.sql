-- ratios/cube_refresh: rebuild ratio_cube from the TEMP table of ratios/cube_fine (inside the
-- rebuild's transaction, after emptying the changed slices): its grouping without account and
-- user, for the slices in _slices_changed.
INSERT INTO ratio_cube
SELECT cluster, gpu_type, "partition", month, state, gpus, cpus, interactive, excluded_reason,
       jobs, gpu_seconds
FROM _ratio_fine AS f
SEMI JOIN _slices_changed AS c
  ON c.cluster IS NOT DISTINCT FROM f.cluster AND c.month IS NOT DISTINCT FROM f.month
WHERE NOT f.people

-- ratios/cube_slice_jobs: the jobs a rebuild reads (TEMP VIEW _slice_jobs, what the builders'
-- {{source}} names): those of the slices in _slices_changed.
CREATE OR REPLACE TEMP VIEW _slice_jobs AS
SELECT j.*
FROM jobs AS j
SEMI JOIN _slices_changed AS c
  ON c.cluster IS NOT DISTINCT FROM j.cluster
 AND c.month IS NOT DISTINCT FROM CAST(date_trunc('month', coalesce(j.start, j.submit)) AS DATE)

-- ratios/cube_slices_all: every slice of jobs now (the {{which}} of ratios/cube_slices_changed
-- for a whole rebuild).
SELECT cluster, month, jobs FROM _slices_now

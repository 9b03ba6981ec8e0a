-- ratios/cube_refresh: rebuild ratio_cube from the TEMP table of ratios/cube_fine (inside the
-- rebuild's transaction, after DELETE FROM ratio_cube): its grouping without account and user.
INSERT INTO ratio_cube
SELECT cluster, gpu_type, "partition", month, state, gpus, cpus, interactive, excluded_reason,
       jobs, gpu_seconds
FROM _ratio_fine
WHERE NOT people

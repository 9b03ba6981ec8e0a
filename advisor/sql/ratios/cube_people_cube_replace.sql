-- ratios/cube_people_cube_replace: fill the emptied ratio_cube_people from _people_next
-- (ratios/cube_people_next), in pid order as ratios/cube_people_cube_refresh stores it.
INSERT INTO ratio_cube_people
SELECT pid, gpus, cpus, excluded_reason, jobs, gpu_seconds FROM _people_next ORDER BY pid

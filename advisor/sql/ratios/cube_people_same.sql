-- ratios/cube_people_same: whether the people of _ratio_fine (every job's cluster, GPU type,
-- partition, account and user) are exactly those ratio_people numbers, so that every pid, and
-- every row of the per-month people cubes outside the changed slices, still holds.
SELECT NOT EXISTS (
    (SELECT DISTINCT cluster, gpu_type, "partition", account, "user" FROM _ratio_fine WHERE people)
    EXCEPT
    (SELECT cluster, gpu_type, "partition", account, "user" FROM ratio_people)
) AND NOT EXISTS (
    (SELECT cluster, gpu_type, "partition", account, "user" FROM ratio_people)
    EXCEPT
    (SELECT DISTINCT cluster, gpu_type, "partition", account, "user" FROM _ratio_fine WHERE people)
)

-- ratios/cube_slices_delete: empty the changed slices of a derived table filed by (cluster,
-- month) ({{table}}: ratio_cube, job_mix_months, usage_months, usage_people_months,
-- usage_starved_months, derived_slices), before they are built again from _slice_jobs.
DELETE FROM {{table}} AS t
USING _slices_changed AS c
WHERE c.cluster IS NOT DISTINCT FROM t.cluster AND c.month IS NOT DISTINCT FROM t.month

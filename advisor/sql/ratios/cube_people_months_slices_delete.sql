-- ratios/cube_people_months_slices_delete: empty the changed slices of a per-month people cube
-- ({{table}}: ratio_cube_people_months or ratio_cube_people_month_ratios), its pids read back to
-- their cluster through ratio_people (unchanged: ratios/cube_people_same held).
DELETE FROM {{table}} AS t
USING ratio_people AS p, _slices_changed AS c
WHERE p.pid = t.pid
  AND c.cluster IS NOT DISTINCT FROM p.cluster
  AND c.month IS NOT DISTINCT FROM t.month

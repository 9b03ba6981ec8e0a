-- ratios/cube_people_months_changed: the rows of ratio_cube_people_months in the changed slices
-- (the {{months}} of ratios/cube_people_month_ratios_refresh after a slice rebuild).
(SELECT m.*
 FROM ratio_cube_people_months AS m
 JOIN ratio_people AS p ON p.pid = m.pid
 SEMI JOIN _slices_changed AS c
   ON c.cluster IS NOT DISTINCT FROM p.cluster AND c.month IS NOT DISTINCT FROM m.month)

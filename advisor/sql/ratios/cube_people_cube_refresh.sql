-- ratios/cube_people_cube_refresh: fill the emptied ratio_cube_people from the people rows of the
-- TEMP table of ratios/cube_fine ({{rows}}: ratios/cube_people_fine_rows), in pid order.
INSERT INTO ratio_cube_people
SELECT * FROM ({{rows}}) ORDER BY pid

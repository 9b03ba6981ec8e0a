-- ratios/inmemory_size: the rows of both people cubes together, what advisor.ratios.inmemory
-- would hold in memory.
SELECT (SELECT count(*) FROM ratio_cube_people) + (SELECT count(*) FROM ratio_cube_people_months)

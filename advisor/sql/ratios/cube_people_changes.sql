-- ratios/cube_people_changes: after ratios/cube_people_next, how many people of the changed
-- slices have no pid yet, and how many pids have no job left: either means the people must be
-- numbered again (and regrouped from every job). {{same_person}}: ratios/same_person of f.
SELECT
    (SELECT count(*) FROM _ratio_fine AS f
     WHERE f.people AND NOT EXISTS (
         SELECT 1 FROM ratio_people AS p
         WHERE {{same_person}})) AS newcomers,
    (SELECT count(*) FROM ratio_people AS p
     WHERE NOT EXISTS (SELECT 1 FROM _people_next AS n WHERE n.pid = p.pid)) AS gone

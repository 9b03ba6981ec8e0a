-- ratios/cube_people_changes: after ratios/cube_people_next, how many people of the changed
-- slices have no pid yet, and how many pids have no job left: either means the people must be
-- numbered again (and regrouped from every job).
SELECT
    (SELECT count(*) FROM _ratio_fine AS f
     WHERE f.people AND NOT EXISTS (
         SELECT 1 FROM ratio_people AS p
         WHERE p.cluster IS NOT DISTINCT FROM f.cluster
           AND p.gpu_type IS NOT DISTINCT FROM f.gpu_type
           AND p."partition" IS NOT DISTINCT FROM f."partition"
           AND p.account IS NOT DISTINCT FROM f.account
           AND p."user" IS NOT DISTINCT FROM f."user")) AS newcomers,
    (SELECT count(*) FROM ratio_people AS p
     WHERE NOT EXISTS (SELECT 1 FROM _people_next AS n WHERE n.pid = p.pid)) AS gone

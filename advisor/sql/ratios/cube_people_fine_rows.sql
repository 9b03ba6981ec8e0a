-- ratios/cube_people_fine_rows: the people rows of the TEMP table of ratios/cube_fine, each under
-- its pid in ratio_people (a person without one is left out: ratios/cube_people_changes counts
-- them); the {{rows}} of ratios/cube_people_cube_refresh and ratios/cube_people_next.
SELECT p.pid, f.gpus, f.cpus, f.excluded_reason, f.jobs, f.gpu_seconds
FROM _ratio_fine AS f
JOIN ratio_people AS p
  ON p.cluster IS NOT DISTINCT FROM f.cluster
 AND p.gpu_type IS NOT DISTINCT FROM f.gpu_type
 AND p."partition" IS NOT DISTINCT FROM f."partition"
 AND p.account IS NOT DISTINCT FROM f.account
 AND p."user" IS NOT DISTINCT FROM f."user"
WHERE f.people

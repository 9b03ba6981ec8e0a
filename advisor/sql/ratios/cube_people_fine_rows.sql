-- ratios/cube_people_fine_rows: the people rows of the TEMP table of ratios/cube_fine, each under
-- its pid in ratio_people (a person without one is left out: ratios/cube_people_changes counts
-- them); the {{rows}} of ratios/cube_people_cube_refresh and ratios/cube_people_next
-- ({{same_person}}: ratios/same_person of f).
SELECT p.pid, f.gpus, f.cpus, f.excluded_reason, f.jobs, f.gpu_seconds
FROM _ratio_fine AS f
JOIN ratio_people AS p
  ON {{same_person}}
WHERE f.people

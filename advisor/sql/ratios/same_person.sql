-- ratios/same_person: the condition that the ratio_people row p is the person of {{row}} (a row
-- with cluster, gpu_type, partition, account and user): the five names match, NULL matching NULL.
-- Spliced into ratios/cube_people_fine_rows, cube_people_changes and cube_people_months_refresh,
-- so that every cube files a job under the same pid.
p.cluster IS NOT DISTINCT FROM {{row}}.cluster
AND p.gpu_type IS NOT DISTINCT FROM {{row}}.gpu_type
AND p."partition" IS NOT DISTINCT FROM {{row}}."partition"
AND p.account IS NOT DISTINCT FROM {{row}}.account
AND p."user" IS NOT DISTINCT FROM {{row}}."user"

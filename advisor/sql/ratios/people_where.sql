-- ratios/people_where: the conditions a ratio query's filters put on the ratio_people rows p
-- (the parameters of ratios/jobs_facts), spliced into each people-cube query at its
-- {{people_where}} placeholder (advisor.ratios: _people_query).
(len($partitions::VARCHAR[]) = 0 OR list_contains($partitions::VARCHAR[], p."partition"))
AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], p.cluster))
AND (len($gpu_types::VARCHAR[]) = 0 OR list_contains($gpu_types::VARCHAR[], p.gpu_type))
AND (len($accounts::VARCHAR[]) = 0 OR list_contains($accounts::VARCHAR[], p.account))
AND (len($users::VARCHAR[]) = 0 OR list_contains($users::VARCHAR[], p."user"))

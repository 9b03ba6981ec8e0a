-- ratios/cube_people_facts: the columns of ratios/jobs_facts, read from ratio_cube_people.
-- Only for queries without month/interactive keys, state filters or time bounds
-- (advisor.ratios decides; such parameters are then NULL or empty).
SELECT
    TRUE AS _all,
    cluster,
    gpu_type,
    "partition",
    account,
    "user",
    NULL::VARCHAR AS month,
    gpus AS gpu_count,
    NULL::VARCHAR AS interactive,
    cpus::DOUBLE / gpus AS v,
    n,
    w,
    excluded_reason
FROM ratio_cube_people
WHERE (len($partitions::VARCHAR[]) = 0 OR list_contains($partitions::VARCHAR[], "partition"))
  AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
  AND (len($gpu_types::VARCHAR[]) = 0 OR list_contains($gpu_types::VARCHAR[], gpu_type))
  AND (len($accounts::VARCHAR[]) = 0 OR list_contains($accounts::VARCHAR[], account))
  AND (len($users::VARCHAR[]) = 0 OR list_contains($users::VARCHAR[], "user"))
  AND ($min_gpus::INTEGER IS NULL OR gpus >= $min_gpus::INTEGER)
  -- no months, days or states here: such queries never come here (and would select nothing)
  AND $start::TIMESTAMP IS NULL AND $end::TIMESTAMP IS NULL
  AND len($states::VARCHAR[]) = 0

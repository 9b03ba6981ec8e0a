-- filters/jobs_where: the nine job filters (advisor.filters.JobFilters, bound by query_params) as
-- one condition on jobs AS j; {{time}} is the time the [$start, $end) window applies to (the
-- start time, or the submit time for jobs never started, as the reader says). NULL or an empty
-- list is no filter.
($start::TIMESTAMP IS NULL OR {{time}} >= $start::TIMESTAMP)
AND ($end::TIMESTAMP IS NULL OR {{time}} < $end::TIMESTAMP)
AND (len($states::VARCHAR[]) = 0 OR list_contains($states::VARCHAR[], j.state))
AND (len($partitions::VARCHAR[]) = 0 OR list_contains($partitions::VARCHAR[], j."partition"))
AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], j.cluster))
AND (len($gpu_types::VARCHAR[]) = 0
     OR list_contains($gpu_types::VARCHAR[], coalesce(j.gpu_type, '(untyped)')))
AND (len($accounts::VARCHAR[]) = 0 OR list_contains($accounts::VARCHAR[], j.account))
AND (len($users::VARCHAR[]) = 0 OR list_contains($users::VARCHAR[], j."user"))
AND ($min_gpus::INTEGER IS NULL OR j.gpus >= $min_gpus::INTEGER)

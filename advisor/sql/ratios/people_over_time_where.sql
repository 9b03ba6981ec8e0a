-- ratios/people_over_time_where: the per-month people cube c's month and state conditions.
($start::TIMESTAMP IS NULL OR c.month >= CAST($start::TIMESTAMP AS DATE))
AND ($end::TIMESTAMP IS NULL OR c.month < CAST($end::TIMESTAMP AS DATE))
AND (len($states::VARCHAR[]) = 0 OR list_contains($states::VARCHAR[], c.state))

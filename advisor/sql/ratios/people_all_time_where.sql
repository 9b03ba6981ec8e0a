-- ratios/people_all_time_where: the all-time people cube has no months or states, so it
-- answers only queries without time bounds or state filters (the planner sends no others).
$start::TIMESTAMP IS NULL AND $end::TIMESTAMP IS NULL AND len($states::VARCHAR[]) = 0

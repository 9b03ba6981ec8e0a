-- ratios/people_months_where: a people cube c's month conditions (its months are first days).
($start::TIMESTAMP IS NULL OR c.month >= CAST($start::TIMESTAMP AS DATE))
AND ($end::TIMESTAMP IS NULL OR c.month < CAST($end::TIMESTAMP AS DATE))

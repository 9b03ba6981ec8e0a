-- The raw GPU type names in the parser's output <parsed>, typed lists included.
SELECT DISTINCT gpu_type_raw FROM {{parsed}} WHERE gpu_type_raw IS NOT NULL
UNION SELECT DISTINCT t.name FROM (SELECT unnest(typed_list) AS t FROM {{parsed}})

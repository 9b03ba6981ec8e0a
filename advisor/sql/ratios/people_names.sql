-- ratios/people_names: each id of one people key (ratio_people's <key>_id: the rank of the value
-- among the column's distinct values) with its value, for naming the groups that
-- ratios/summary_people numbers. Placeholders, fixed text chosen in advisor.ratios: id (the
-- id column, e.g. user_id) and key (the quoted key column, e.g. "user").
SELECT {{id}} AS id, any_value({{key}}) AS name
FROM ratio_people
GROUP BY {{id}}

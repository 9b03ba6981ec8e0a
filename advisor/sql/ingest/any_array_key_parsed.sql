-- Whether `parsed` holds array tasks keyed by their JobID (no raw id: strict.sql, ing_array_key).
SELECT count(*) FROM (SELECT 1 FROM parsed WHERE job_id_raw < 0 LIMIT 1)

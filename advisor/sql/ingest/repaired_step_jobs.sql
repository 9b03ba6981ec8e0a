-- The jobs of the repaired step lines of `parsed` (bulk.py: their verdict is given again).
SELECT DISTINCT cluster, job_id_raw FROM parsed WHERE repaired AND step IS NOT NULL

-- Keys that one source holds more than once (overlapping windows, concatenated files).
CREATE OR REPLACE TEMP TABLE dupkeys AS
SELECT cluster, job_id_raw, submit
FROM parsed
WHERE step IS NULL AND bad_field IS NULL
GROUP BY ALL
HAVING count(*) > 1;

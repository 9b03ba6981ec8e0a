-- A step line with bytes that are not UTF-8 outside its id columns was read by the light step
-- read of a bulk load (bulk.py) and again, repaired, from the reject tables: keep the repaired
-- one (a careful load reads it once, repaired).
DELETE FROM parsed
WHERE NOT repaired AND step IS NOT NULL
  AND EXISTS (SELECT 1 FROM parsed r
              WHERE r.repaired AND r.step = parsed.step AND r.cluster = parsed.cluster
                AND r.job_id_raw = parsed.job_id_raw)

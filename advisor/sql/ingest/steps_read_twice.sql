-- Step lines that `parsed` holds twice, as read and repaired: keep the repaired one. A step
-- record a newline split in its last field was read as its first half and again whole; in a
-- bulk load (bulk.py) a step line with bytes that are not UTF-8 outside its id columns was
-- read by the light step read and again, repaired, from the reject tables.
DELETE FROM parsed
WHERE NOT repaired AND step IS NOT NULL
  AND EXISTS (SELECT 1 FROM parsed r
              WHERE r.repaired AND r.step = parsed.step AND r.cluster = parsed.cluster
                AND r.job_id_raw = parsed.job_id_raw)

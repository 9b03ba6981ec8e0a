-- Step lines the load holds twice, as read and repaired: keep the repaired one (in `parsed`),
-- the other read from `parsed` or, in a bulk load, from parsed_steps. A step record a newline
-- split in its last field was read as its first half and again whole; in a bulk load
-- (bulk.py) a step line with bytes that are not UTF-8 outside its id columns was read by the
-- light step read and again, repaired, from the reject tables.
DELETE FROM parsed
WHERE NOT repaired AND step IS NOT NULL
  AND EXISTS (SELECT 1 FROM parsed r
              WHERE r.repaired AND r.step = parsed.step AND r.cluster = parsed.cluster
                AND r.job_id_raw = parsed.job_id_raw);
DELETE FROM parsed_steps
WHERE EXISTS (SELECT 1 FROM parsed r
              WHERE r.repaired AND r.step = parsed_steps.step AND r.cluster = parsed_steps.cluster
                AND r.job_id_raw = parsed_steps.job_id_raw)

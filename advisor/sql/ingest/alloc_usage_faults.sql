-- The allocation lines of a bulk load (bulk.py) that its insert left out for a usage fault
-- (parse.sql: usage_fault), read again into `parsed`: stored with that value NULL, as the
-- careful way stores them. Repaired lines went in with the repair.
SELECT * FROM parsed WHERE NOT repaired AND usage_fault IS NOT NULL

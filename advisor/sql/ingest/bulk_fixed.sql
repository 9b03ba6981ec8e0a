-- Temp table `fixed`: the repaired allocation lines of a bulk load (bulk.py) as rows for
-- `jobs` (<rows>: fold.sql over alloc_repaired.sql).
CREATE OR REPLACE TEMP TABLE fixed AS SELECT * FROM (
{{rows}}
)

-- Temp `rekeyed`: the keys of stored tasks that took their raw id in this load (keys.py).
CREATE OR REPLACE TEMP TABLE rekeyed (cluster VARCHAR, job_id_raw BIGINT, submit TIMESTAMP)

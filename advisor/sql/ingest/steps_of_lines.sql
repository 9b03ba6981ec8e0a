-- step_flags.sql's filter to the jobs of <lines> (a relation of parsed lines).
EXISTS (SELECT 1 FROM {{lines}} AS l WHERE l.cluster = p.cluster AND l.job_id_raw = p.job_id_raw)

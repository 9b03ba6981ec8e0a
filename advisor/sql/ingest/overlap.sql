-- Whether any stored allocation could share a key with this source (same cluster, submit time
-- within the source's range). When none can, the upsert is a plain insert.
SELECT EXISTS (
    SELECT 1 FROM jobs j
    WHERE j.cluster IN (SELECT DISTINCT cluster FROM parsed WHERE step IS NULL)
      AND j.submit BETWEEN (SELECT min(submit) FROM parsed WHERE step IS NULL)
                       AND (SELECT max(submit) FROM parsed WHERE step IS NULL)
)

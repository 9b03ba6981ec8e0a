-- Records of one source that a later line with the same key replaces (the last line wins).
CREATE OR REPLACE TEMP TABLE superseded AS
SELECT unnest(list_filter(rids, r -> r <> max_rid)) AS rid
FROM (
    SELECT list(rid) AS rids, max(rid) AS max_rid
    FROM parsed
    WHERE step IS NULL AND bad_field IS NULL
    GROUP BY cluster, job_id_raw, submit
    HAVING count(*) > 1
);

-- ratios/inmemory_rows: a people cube's rows for advisor.ratios.inmemory: pid, month (days since
-- 1970, or 0 for the all-time cube), the ratio of counted rows (the facts' expression, NaN on
-- excluded ones), jobs, GPU-seconds, and the exclusion reason as its position in $reasons
-- (0: counted; 127: a reason advisor does not know, refused by the reader). No column is NULL:
-- numpy reads them without masks, several times faster.
-- Placeholders (fixed text chosen in advisor.ratios): cube (ratio_cube_people or
-- ratio_cube_people_months) and month (the month expression, or 0).
SELECT c.pid, {{month}} AS month,
       CASE WHEN c.excluded_reason IS NULL THEN c.cpus::DOUBLE / c.gpus ELSE 'NaN'::DOUBLE END
           AS cores_per_gpu,
       c.jobs::BIGINT AS jobs, c.gpu_seconds::BIGINT AS gpu_seconds,
       CASE WHEN c.excluded_reason IS NULL THEN 0
            ELSE coalesce(list_position($reasons::VARCHAR[], c.excluded_reason), 127)
       END::TINYINT AS excluded
FROM {{cube}} AS c

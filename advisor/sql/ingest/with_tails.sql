-- A text source (<src>) with the last field (<last>) of each record in temp tail_fix whole:
-- matched on its job id, cluster and submit texts and the first half's last field (a requeued
-- job shares the id, not the submit time).
SELECT s.* REPLACE (coalesce(t.whole_last, s.{{last}}) AS {{last}})
FROM ({{src}}) AS s
LEFT JOIN tail_fix t
    ON t.id_txt = ing_id_text(s.jobid, s.jobidraw)
   AND t.cluster = coalesce(s.cluster, '') AND t.submit = coalesce(s.submit, '')
   AND t.head_last = s.{{last}}

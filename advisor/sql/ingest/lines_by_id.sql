-- Each line of a sacct text file (<src>) whose job id (JobID, else JobIDRaw) is in $ids,
-- with its text (<raw_text>), in file order.
SELECT ing_id_text(jobid, jobidraw) AS id, {{raw_text}} AS raw
FROM ({{src}}) AS s
WHERE list_contains($ids, ing_id_text(jobid, jobidraw))

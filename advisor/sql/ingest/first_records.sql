-- The first $sample records of a text file (<src>: a light read of their TRES columns) as
-- tres_lookup.sql's groups.
(SELECT ing_is_step(jobid, jobidraw) AS is_step, alloctres, reqtres, 1 AS n
 FROM ({{src}}) AS s LIMIT $sample)

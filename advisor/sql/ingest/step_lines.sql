-- The step lines of a text source (<src>).
SELECT * FROM ({{src}}) AS s WHERE ing_is_step(jobid, jobidraw)

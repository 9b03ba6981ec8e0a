-- The allocation lines of a text source (<src>): the parser never spends time on steps.
SELECT * FROM ({{src}}) AS s WHERE coalesce(NOT ing_is_step(jobid, jobidraw), TRUE)

-- Step lines of the load that parsed (the view step_rows), and allocation lines of `parsed`
-- with a state word Slurm does not print.
SELECT (SELECT count(*) FROM step_rows WHERE bad_field IS NULL),
       count(*) FILTER (WHERE step IS NULL AND bad_field IS NULL AND state IS NULL
                        AND state_raw IS NOT NULL)
FROM parsed

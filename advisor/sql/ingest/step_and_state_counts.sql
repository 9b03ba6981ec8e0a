-- Step lines of `parsed` that parsed, and allocation lines with a state word Slurm does not
-- print.
SELECT count(*) FILTER (WHERE step IS NOT NULL AND bad_field IS NULL),
       count(*) FILTER (WHERE step IS NULL AND bad_field IS NULL AND state IS NULL
                        AND state_raw IS NOT NULL)
FROM parsed

-- Step lines the bulk way's light step read (parsed_steps) could not parse.
SELECT count(*) FROM parsed_steps WHERE bad_field IS NOT NULL

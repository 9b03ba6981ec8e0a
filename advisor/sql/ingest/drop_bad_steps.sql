-- Drop them: they are read again whole into `parsed` (a reject keeps its whole text).
DELETE FROM parsed_steps WHERE bad_field IS NOT NULL

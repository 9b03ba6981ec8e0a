-- Allocation lines read (not repaired) that could not be parsed.
SELECT count(*) FROM parsed WHERE step IS NULL AND NOT repaired AND bad_field IS NOT NULL

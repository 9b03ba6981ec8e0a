SELECT count(*) FROM parsed WHERE bad_field IS NOT NULL

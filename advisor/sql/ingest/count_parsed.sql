SELECT count(*) FROM parsed

-- The allocation lines read into `parsed`, bad ones included.
SELECT count(*) FROM parsed WHERE step IS NULL

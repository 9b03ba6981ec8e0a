-- Allocation lines of `parsed` when no key occurs twice (dupkeys is empty): no join needed.
    SELECT * FROM parsed WHERE step IS NULL AND bad_field IS NULL

-- Whether the parsed lines hold steps.
SELECT count(*) FROM (SELECT 1 FROM parsed WHERE step IS NOT NULL LIMIT 1)

-- Whether the parsed lines hold steps.
SELECT count(*) FROM (SELECT 1 FROM step_rows LIMIT 1)

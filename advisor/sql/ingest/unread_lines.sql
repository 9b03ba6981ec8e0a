-- Lines DuckDB's read rejected (text.REJ_ERRORS) for bytes that are not UTF-8 alone.
SELECT any_value(csv_line) FROM ing_csv_errors
GROUP BY line
HAVING bool_and(error_type = 'INVALID ENCODING')

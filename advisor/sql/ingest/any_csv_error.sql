-- Whether DuckDB's last read_csv rejected a line (its reject table: text.REJ_ERRORS).
SELECT count(*) FROM (SELECT 1 FROM ing_csv_errors LIMIT 1)

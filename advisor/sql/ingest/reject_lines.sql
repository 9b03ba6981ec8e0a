-- The lines DuckDB's last read_csv rejected (text.REJ_ERRORS), in order.
SELECT DISTINCT line FROM ing_csv_errors ORDER BY line

-- A sacct text file as parser input, values as parameters (text.csv_params): one VARCHAR
-- column per file column, no quoting (sacct never quotes). <columns>: those read, then NULL
-- for the canonical fields the file lacks; <on_error>: keep the lines DuckDB cannot read in
-- its reject tables, or skip them.
SELECT CAST(NULL AS BIGINT) AS line_no, FALSE AS repaired, {{columns}}
FROM read_csv($path, delim = $delim, header = $header, quote = '', escape = '', comment = '',
              auto_detect = false, columns = $columns, compression = $compression,
              {{on_error}} max_line_size = 4194304, strict_mode = $strict, parallel = true)

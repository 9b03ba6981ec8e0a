-- The repaired records (temp raw_fix) as parser input; <nulls>: the fields the file lacks.
SELECT line_no, TRUE AS repaired, * EXCLUDE (line_no){{nulls}} FROM raw_fix

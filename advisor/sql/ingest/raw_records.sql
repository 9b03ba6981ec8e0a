-- JSON and jobcomp records (temp `raw`, filled from Python) as parser input.
SELECT line_no, FALSE AS repaired, * EXCLUDE (line_no) FROM raw

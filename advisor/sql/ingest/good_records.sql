-- Records read line by line in Python (temp raw_good) as parser input; <nulls>: the fields
-- the file lacks.
SELECT line_no, FALSE AS repaired, * EXCLUDE (line_no){{nulls}} FROM raw_good

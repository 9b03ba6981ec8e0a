-- The view step_rows: every step line of the load, as the fold and the step checks read it:
-- those of parsed_steps (the bulk way's step read) and those of `parsed` (the careful way's,
-- and steps read again whole: repaired, or unparsable in the light read). <columns>:
-- stages.STEP_COLUMNS.
CREATE OR REPLACE TEMP VIEW step_rows AS
SELECT {{columns}} FROM parsed_steps
UNION ALL
SELECT {{columns}} FROM parsed WHERE step IS NOT NULL

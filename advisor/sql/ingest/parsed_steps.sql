-- Temp parsed_steps: step lines as narrow rows, the columns the fold and the step checks read
-- (<columns>: stages.STEP_COLUMNS). The bulk way's light step read writes them here from the
-- parser (<parse>) instead of full rows into `parsed`: a step row of `parsed` keeps about 500
-- bytes in memory, nearly all of them empty columns, and a 46.5M-record file has 32M step lines.
-- The careful way makes it empty (<parse> over `parsed` with no row): its steps stay in `parsed`.
CREATE OR REPLACE TEMP TABLE parsed_steps AS
SELECT {{columns}} FROM ({{parse}}) AS p

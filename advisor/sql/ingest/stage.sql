-- The view `stage`: the careful way's rows for `jobs` (<rows>: fold.sql over `parsed`).
CREATE OR REPLACE TEMP VIEW stage AS
{{rows}}

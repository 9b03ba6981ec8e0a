-- ratios/cube_slices_changed: the slices to rebuild (TEMP _slices_changed), {{which}}: every
-- slice of jobs now (a whole rebuild), or those whose count or checksum differ from what the
-- derived tables were built from (derived_slices), slices that lost all their jobs included.
CREATE OR REPLACE TEMP TABLE _slices_changed AS
{{which}}

-- The version of the rules the ratio cubes were built with (advisor.ratios.CUBE_RULES_VERSION):
-- a cube built by older rules reads as stale and is rebuilt.
ALTER TABLE ratio_cube_state ADD COLUMN rules_version INTEGER DEFAULT 0;

-- ratio_cube_schema: the rules version (advisor.ratios.cube.CUBE_RULES_VERSION) the derived
-- tables were created under; another version drops and recreates them all.
{{create}} ratio_cube_schema (
    rules_version INTEGER NOT NULL
)

-- ratios/state/rules_version: the rules version the derived tables were created under.
SELECT max(rules_version) FROM ratio_cube_schema

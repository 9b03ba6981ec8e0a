-- ratios/state/set_rules_version: stamp newly created derived tables with the code's version.
INSERT INTO ratio_cube_schema VALUES ($rules_version)

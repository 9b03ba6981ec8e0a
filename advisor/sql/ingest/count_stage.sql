SELECT count(*) FROM stage

-- A load's rejects, from the Arrow table registered as ing_rejects.
INSERT INTO rejects BY NAME SELECT * FROM ing_rejects

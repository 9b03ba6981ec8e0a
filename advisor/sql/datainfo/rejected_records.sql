-- How many rejected records the database keeps, over every load.
SELECT count(*) FROM rejects

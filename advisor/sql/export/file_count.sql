-- How many files match a glob (local or an object-store URL).
SELECT count(*) FROM glob($files)

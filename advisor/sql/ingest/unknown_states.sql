-- Rows a load wrote with a state word Slurm does not print.
SELECT count(*) FROM jobs WHERE ingest_id = $ingest_id AND state IS NULL AND state_raw IS NOT NULL

-- Remove one run's row (its requests and points go first: see delete_run_requests.sql).
DELETE FROM bench_runs WHERE run_id = $run_id;

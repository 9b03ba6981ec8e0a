-- Remove one run's requests (before loading the run again).
DELETE FROM bench_requests WHERE run_id = $run_id;

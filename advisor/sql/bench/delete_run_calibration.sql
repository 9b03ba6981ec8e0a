-- Remove the calibration points derived from one run.
DELETE FROM calibration WHERE source = 'bench:' || $run_id;

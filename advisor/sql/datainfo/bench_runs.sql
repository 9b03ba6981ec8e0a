-- Benchmark runs stored by `advisor bench collect`, one row per run, for the dashboard's
-- Benchmarks page. $platform: NULL or one platform.
SELECT run_id, started_at, status, engine, engine_version, model, model_params_b, platform,
       gpus, tp, cores, coalesce(cores_per_gpu, cores::DOUBLE / nullif(gpus, 0)) AS cores_per_gpu,
       workload, attacker_rps, attacker_tokens_min, attacker_tokens_max, victim_rps, repeat,
       victim_ttft_p50_ms, victim_ttft_p90_ms, attacker_ttft_p50_ms,
       requests_ok, requests_failed, requests_timed_out, engine_cpu_percent, gpu_util_percent,
       tokenize_share
FROM bench_runs
WHERE ($platform::VARCHAR IS NULL OR platform = $platform::VARCHAR)
ORDER BY platform, model, gpus, workload, attacker_rps, cores, repeat, run_id;

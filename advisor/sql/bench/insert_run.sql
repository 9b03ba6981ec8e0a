-- One benchmark run (advisor.harness.records.RunResult.run), JSON columns given as JSON text.
INSERT INTO bench_runs (
    run_id, started_at, finished_at, status, engine, engine_version, model, model_params_b,
    platform, gpu_name, cpu_model, gpus, tp, cores, cores_per_gpu, core_list, workload,
    attacker_rps, attacker_tokens_min, attacker_tokens_max, victim_rps, duration_s, "repeat",
    timeout_s, victim_ttft_p50_ms, victim_ttft_p90_ms, attacker_ttft_p50_ms, requests_ok,
    requests_failed, requests_timed_out, engine_cpu_percent, gpu_util_percent, tokenize_share,
    env, metrics_before, metrics_after, extra, source_file, cluster, "partition"
) VALUES (
    $run_id, CAST($started_at AS TIMESTAMP), CAST($finished_at AS TIMESTAMP), $status, $engine,
    $engine_version, $model, $model_params_b, $platform, $gpu_name, $cpu_model, $gpus, $tp,
    $cores, $cores_per_gpu, $core_list, $workload, $attacker_rps, $attacker_tokens_min,
    $attacker_tokens_max, $victim_rps, $duration_s, $repeat, $timeout_s, $victim_ttft_p50_ms,
    $victim_ttft_p90_ms, $attacker_ttft_p50_ms, $requests_ok, $requests_failed,
    $requests_timed_out, $engine_cpu_percent, $gpu_util_percent, $tokenize_share,
    CAST($env AS JSON), CAST($metrics_before AS JSON), CAST($metrics_after AS JSON),
    CAST($extra AS JSON), $source_file, $cluster, $partition
);

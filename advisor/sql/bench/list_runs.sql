-- Collected runs, optionally of one platform and one status; the columns `bench runs` shows.
SELECT
    run_id, status, platform, engine, engine_version, model, tp, cores, cores_per_gpu,
    workload, attacker_rps, "repeat", victim_ttft_p50_ms, victim_ttft_p90_ms,
    attacker_ttft_p50_ms, requests_ok, requests_failed, requests_timed_out,
    engine_cpu_percent, gpu_util_percent, started_at, cluster, "partition",
    array_to_string(json_extract_string(extra, '$.flags[*].flag'), ',') AS flags,
    array_to_string(json_extract_string(extra, '$.flags[*].reason'), '; ') AS flag_reasons
FROM bench_runs
WHERE ($platform IS NULL OR platform = $platform)
  AND ($status IS NULL OR status = $status)
ORDER BY platform, engine, model, tp, workload, attacker_rps, cores, "repeat", run_id;

-- Benchmark runs stored by `advisor bench collect`, one row per run, for the dashboard's
-- Benchmarks page, filtered as the sidebar filters jobs. Parameters (an empty list or NULL =
-- no filter): $platforms, $clusters, $partitions (VARCHAR[]); $start, $end (TIMESTAMP, UTC,
-- [start, end) on the run's start). A run with no recorded cluster, partition or start (run
-- outside Slurm, or stored by an older advisor) matches no filter on that column. The wait
-- columns are NULL for a run that recorded none (older runs, a sampler that could not read).
SELECT run_id, started_at, status, engine, engine_version, model, model_params_b, platform,
       gpus, tp, cores, coalesce(cores_per_gpu, cores::DOUBLE / nullif(gpus, 0)) AS cores_per_gpu,
       workload, attacker_rps, attacker_tokens_min, attacker_tokens_max, victim_rps, repeat,
       victim_ttft_p50_ms, victim_ttft_p90_ms, attacker_ttft_p50_ms,
       requests_ok, requests_failed, requests_timed_out, engine_cpu_percent, gpu_util_percent,
       tokenize_share, cluster, "partition",
       array_to_string(json_extract_string(extra, '$.flags[*].flag'), ',') AS flags,
       array_to_string(json_extract_string(extra, '$.flags[*].reason'), '; ') AS flag_reasons,
       w.wait_engine_core, w.wait_api_server
FROM bench_runs
-- each run's measured run-queue wait per process, as `bench collect` stored it with the run
LEFT JOIN (
    SELECT source,
           max(value) FILTER (WHERE metric = 'wait_engine_core_share') AS wait_engine_core,
           max(value) FILTER (WHERE metric = 'wait_api_server_share') AS wait_api_server
    FROM calibration
    WHERE metric IN ('wait_engine_core_share', 'wait_api_server_share')
    GROUP BY source
) w ON w.source = 'bench:' || run_id
WHERE (len($platforms::VARCHAR[]) = 0 OR list_contains($platforms::VARCHAR[], platform))
  AND (len($clusters::VARCHAR[]) = 0 OR list_contains($clusters::VARCHAR[], cluster))
  AND (len($partitions::VARCHAR[]) = 0 OR list_contains($partitions::VARCHAR[], "partition"))
  AND ($start::TIMESTAMP IS NULL OR started_at >= $start::TIMESTAMP)
  AND ($end::TIMESTAMP IS NULL OR started_at < $end::TIMESTAMP)
ORDER BY platform, model, gpus, workload, attacker_rps, cores, repeat, run_id;

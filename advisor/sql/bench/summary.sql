-- Repeats of one point folded: median victim TTFT p50 with its range over repeats, and the
-- speedup of the point's median against the fewest cores of its series (same platform, engine,
-- version, model, TP, workload, load, and engine identity: executor, renderer workers and other
-- CPU-relevant engine arguments, `extra.series`, written by bench run or derived by bench
-- collect). Runs that did not end ok, or that carry a flag (see advisor.harness.metrics.run_flags),
-- are counted, not averaged.
WITH marked AS (
    SELECT
        *,
        status = 'ok' AND coalesce(json_array_length(extra, '$.flags'), 0) = 0 AS usable,
        coalesce(json_array_length(extra, '$.flags'), 0) > 0 AS flagged,
        json_extract_string(extra, '$.series.id') AS series_id,
        json_extract_string(extra, '$.series.executor') AS executor,
        TRY_CAST(json_extract_string(extra, '$.series.renderer_workers') AS INTEGER)
            AS renderer_workers,
        TRY_CAST(json_extract_string(extra, '$.wait.by_role.engine_core.wait_share') AS DOUBLE)
            AS wait_core,
        TRY_CAST(json_extract_string(extra, '$.wait.by_role.api_server.wait_share') AS DOUBLE)
            AS wait_api,
        TRY_CAST(json_extract_string(extra, '$.wait.psi.machine.some_share') AS DOUBLE)
            AS psi_some
    FROM bench_runs
    WHERE ($platform IS NULL OR platform = $platform)
),
points AS (
    SELECT
        platform, engine, engine_version, model, tp, executor, renderer_workers, series_id,
        workload, attacker_rps, attacker_tokens_min, attacker_tokens_max, cores,
        any_value(cores_per_gpu) AS cores_per_gpu,
        count(*) AS runs,
        count(*) FILTER (WHERE status = 'ok') AS runs_ok,
        count(*) FILTER (WHERE flagged) AS runs_flagged,
        median(victim_ttft_p50_ms) FILTER (WHERE usable) AS victim_ttft_p50_ms,
        min(victim_ttft_p50_ms) FILTER (WHERE usable) AS victim_ttft_p50_min_ms,
        max(victim_ttft_p50_ms) FILTER (WHERE usable) AS victim_ttft_p50_max_ms,
        median(victim_ttft_p90_ms) FILTER (WHERE usable) AS victim_ttft_p90_ms,
        median(attacker_ttft_p50_ms) FILTER (WHERE usable) AS attacker_ttft_p50_ms,
        sum(requests_timed_out) AS requests_timed_out,
        avg(engine_cpu_percent) AS engine_cpu_percent,
        avg(gpu_util_percent) AS gpu_util_percent,
        -- run-queue wait per role (advisor.harness.serve.waits), median and range over the ok runs
        -- that recorded it, whatever TTFT's flags
        median(wait_core) FILTER (WHERE status = 'ok') AS wait_engine_core,
        min(wait_core) FILTER (WHERE status = 'ok') AS wait_engine_core_min,
        max(wait_core) FILTER (WHERE status = 'ok') AS wait_engine_core_max,
        median(wait_api) FILTER (WHERE status = 'ok') AS wait_api_server,
        min(wait_api) FILTER (WHERE status = 'ok') AS wait_api_server_min,
        max(wait_api) FILTER (WHERE status = 'ok') AS wait_api_server_max,
        median(psi_some) FILTER (WHERE status = 'ok') AS psi_cpu_some
    FROM marked
    GROUP BY ALL
)
SELECT
    *,
    first(victim_ttft_p50_ms) OVER series / victim_ttft_p50_ms AS speedup_vs_fewest_cores
FROM points
WINDOW series AS (
    PARTITION BY platform, engine, engine_version, model, tp, series_id, workload,
        attacker_rps, attacker_tokens_min, attacker_tokens_max
    ORDER BY cores
    ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING
)
ORDER BY platform, engine, model, tp, executor, renderer_workers, workload, attacker_rps, cores;

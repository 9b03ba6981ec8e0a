-- One calibration point derived from a run (see advisor.harness.results.collect.calibration_points).
INSERT INTO calibration (
    point_id, source, source_ref, platform, engine, engine_version, model, model_params_b, gpus,
    workload, load_rps, prompt_tokens, cores, cores_per_gpu, metric, value, unit, measured_on,
    notes
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, CAST(? AS DATE), ?);

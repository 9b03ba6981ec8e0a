-- model/calibration_points: every calibration point stored in the database (bench results
-- collected by `advisor bench collect`, or points loaded there by hand), in the column order of
-- data/calibration/*.csv.
SELECT
    point_id, source, source_ref, platform, engine, engine_version, model, model_params_b, gpus,
    workload, load_rps, prompt_tokens, cores, cores_per_gpu, metric, value, unit, measured_on,
    notes
FROM calibration
ORDER BY point_id

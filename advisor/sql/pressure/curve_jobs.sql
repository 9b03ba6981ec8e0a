-- pressure/curve_jobs: every measured GPU job (usage/facts.sql, the facts placeholder) with the
-- curve's group ({{keys}}: the quoted group columns, then a comma; {{order}}: the same for ORDER
-- BY, then a comma), its whole cores per GPU (rounded down: the DefCpuPerGPU it meets), its
-- GPU-hours and its stall shares; advisor.pressure.curve weighs and resamples them per cell.
WITH f AS (
{{facts}}
)
SELECT {{keys}}
    CAST(floor(cores_per_gpu) AS INTEGER) AS cores_per_gpu,
    gpu_hours,
    psi_some_share AS some_share,
    psi_full_share AS full_share
FROM f
WHERE has_pressure AND gpu_hours > 0
ORDER BY {{order}} cores_per_gpu

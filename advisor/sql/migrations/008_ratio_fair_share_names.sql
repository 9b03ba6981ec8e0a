-- ratio_fair_share's column named for what it holds: cores per GPU of the node type.
CREATE OR REPLACE VIEW ratio_fair_share AS
SELECT cluster,
       coalesce(gpu_type, '(untyped)') AS gpu_type,
       min(coalesce(cpus_effective, cpus)::DOUBLE / gpus) AS fair_share_cores_per_gpu
FROM nodes
WHERE gpus > 0 AND coalesce(cpus_effective, cpus) > 0
GROUP BY ALL;

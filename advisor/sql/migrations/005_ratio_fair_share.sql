-- ratio_fair_share: per (cluster, GPU type) of the node inventory, the fewest cores per GPU a
-- node of that type offers (usable CPUs: CPUEfctv when known, else CPUTot; / GPUs), the fair
-- share a ratio summary compares each job with. A view, so that every facts query of the ratio
-- summaries (jobs, ratio_cube, the people cubes) joins the same definition; nodes is small.
CREATE VIEW ratio_fair_share AS
SELECT cluster,
       coalesce(gpu_type, '(untyped)') AS gpu_type,
       min(coalesce(cpus_effective, cpus)::DOUBLE / gpus) AS fs
FROM nodes
WHERE gpus > 0 AND coalesce(cpus_effective, cpus) > 0
GROUP BY ALL;

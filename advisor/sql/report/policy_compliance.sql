-- The month's GPU jobs against an exported policy: each job takes its most specific rule
-- ((partition, type) > (partition, *) > (*, type) > (*, *), as the Lua plugins do: the GRES
-- type as the site names it, lower case; a partition list counts as its first partition) and
-- complies when its cores per GPU reach the rule's min_cpus_per_gpu. Jobs no rule matches are
-- left out. Same eligibility as the ratio analytics (started, ran, CPUs and GPUs known).
-- $start, $end: the month; $cluster: NULL = all; the rules as parallel lists $rule_no,
-- $rule_partition, $rule_gpu_type, $rule_min (one entry per rule).
WITH rules AS (
    SELECT unnest($rule_no::INTEGER[]) AS rule_no,
           unnest($rule_partition::VARCHAR[]) AS r_partition,
           unnest($rule_gpu_type::VARCHAR[]) AS r_gpu_type,
           unnest($rule_min::DOUBLE[]) AS r_min
),
month_jobs AS (
    SELECT cluster, job_id_raw, submit,
           split_part(coalesce("partition", ''), ',', 1) AS part,
           lower(gpu_type_raw) AS gres,
           cpus::DOUBLE / gpus AS cores_per_gpu
    FROM jobs
    WHERE gpus > 0 AND cpus > 0 AND elapsed_s > 0 AND start IS NOT NULL
      AND start >= $start::TIMESTAMP AND start < $end::TIMESTAMP
      AND ($cluster::VARCHAR IS NULL OR cluster = $cluster::VARCHAR)
),
matched AS (
    SELECT j.cluster, j.job_id_raw, j.submit, any_value(j.cores_per_gpu) AS cores_per_gpu,
           arg_min(r.rule_no,
                   (CASE WHEN r.r_partition = '*' THEN 2 ELSE 0 END)
                   + (CASE WHEN r.r_gpu_type = '*' THEN 1 ELSE 0 END)) AS rule_no
    FROM month_jobs j
    JOIN rules r
      ON (r.r_partition = '*' OR r.r_partition = j.part)
     AND (r.r_gpu_type = '*' OR r.r_gpu_type = j.gres)
    GROUP BY j.cluster, j.job_id_raw, j.submit
)
SELECT m.rule_no, count(*) AS jobs, count(*) FILTER (WHERE m.cores_per_gpu >= r.r_min) AS compliant
FROM matched m JOIN rules r USING (rule_no)
GROUP BY m.rule_no
ORDER BY m.rule_no

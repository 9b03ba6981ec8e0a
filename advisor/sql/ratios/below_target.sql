-- ratios/below_target: rank groups by GPU-seconds below a target ratio over any facts relation
-- (ratios/jobs_facts or a cube's facts): the general path of advisor.ratios.below_target, for
-- queries the people cubes cannot rank (ratios/below_target_people: the same columns and order,
-- without that statement's summary rows of the top groups).
-- Placeholders: facts and keys as in ratios/summary. Parameters: those of the facts, plus
-- $target_partitions/$target_gpu_types/$target_values or $fixed, and $top.
WITH facts AS (
{{facts}}
),
targets AS (
    SELECT unnest($target_partitions::VARCHAR[]) AS _tp,
           unnest($target_gpu_types::VARCHAR[]) AS _tg,
           unnest($target_values::DOUBLE[]) AS _tv
),
agg AS MATERIALIZED (
    SELECT {{keys}}, f.excluded_reason AS _reason, coalesce($fixed::DOUBLE, t._tv) AS target,
           sum(f.jobs) AS jobs, sum(f.gpu_seconds) AS gpu_s,
           coalesce(sum(f.jobs) FILTER (WHERE f.cores_per_gpu < coalesce($fixed::DOUBLE, t._tv)), 0)
               AS n_below,
           coalesce(sum(f.gpu_seconds)
                    FILTER (WHERE f.cores_per_gpu < coalesce($fixed::DOUBLE, t._tv)), 0) AS w_below
    FROM facts AS f
    LEFT JOIN targets AS t
      ON t._tp IS NOT DISTINCT FROM f."partition" AND t._tg IS NOT DISTINCT FROM f.gpu_type
    GROUP BY ALL
),
top AS (
    SELECT {{keys}}, target, jobs::BIGINT AS jobs, gpu_s::DOUBLE AS gpu_s,
           n_below::BIGINT AS n_below, w_below::DOUBLE AS w_below
    FROM agg
    WHERE _reason IS NULL AND w_below > 0
    ORDER BY w_below DESC, {{keys}}
    LIMIT $top
)
SELECT row_number() OVER (ORDER BY w_below DESC, {{keys}}) AS gid, * FROM top
UNION ALL BY NAME
SELECT (SELECT count(*) FROM agg WHERE _reason IS NULL) AS groups,
       (SELECT coalesce(list({'reason': reason, 'jobs': jobs::BIGINT} ORDER BY reason), [])
        FROM (SELECT _reason AS reason, sum(jobs) AS jobs FROM agg
              WHERE _reason IS NOT NULL GROUP BY 1)) AS excluded

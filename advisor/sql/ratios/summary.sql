-- ratios/summary: per group, jobs, GPU-seconds, percentiles, mean, shares below thresholds and
-- below the node types' fair share. Placeholders: facts (ratios/jobs_facts or ratios/cube_facts) and
-- keys (the quoted group key columns: fixed names chosen in advisor.ratios, never user text).
-- Parameters: those of ratios/jobs_facts, plus $quantiles and $thresholds (DOUBLE[]).
--
-- Percentiles are computed from the exact distinct-value counts of each group, so they are
-- exact, not approximated:
--   by jobs: linear interpolation between order statistics (numpy's default "linear",
--     DuckDB's quantile_cont): h = (n - 1) q, x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]);
--   by GPU-seconds: the weighted inverted CDF (numpy.percentile(method="inverted_cdf",
--     weights=...)): the smallest ratio whose cumulative GPU-second share reaches q.
WITH facts AS (
{{facts}}
),
agg AS MATERIALIZED (
    -- one pass over the facts: counted jobs by ratio, and excluded jobs by reason
    SELECT {{keys}}, cluster AS _cluster, gpu_type AS _gpu_type, v,
           excluded_reason AS _reason, sum(n) AS n, sum(w) AS w
    FROM facts
    GROUP BY ALL
),
per_type AS (
    SELECT * EXCLUDE (_reason) FROM agg WHERE _reason IS NULL
),
excl AS (
    SELECT _reason AS reason, sum(n) AS jobs FROM agg WHERE _reason IS NOT NULL GROUP BY _reason
),
fair AS (
    SELECT cluster AS _cluster, coalesce(gpu_type, '(untyped)') AS _gpu_type,
           min(coalesce(cpus_effective, cpus)::DOUBLE / gpus) AS fs
    FROM nodes
    WHERE gpus > 0 AND coalesce(cpus_effective, cpus) > 0
    GROUP BY ALL
),
vals AS (
    SELECT {{keys}}, p.v, f.fs, sum(p.n) AS n, sum(p.w) AS w
    FROM per_type AS p
    LEFT JOIN fair AS f ON f._cluster = p._cluster AND f._gpu_type = p._gpu_type
    GROUP BY ALL
),
grouped AS (
    SELECT *, dense_rank() OVER (ORDER BY {{keys}}) AS gid
    FROM vals
),
cum AS (
    SELECT gid, v,
           sum(n) OVER (PARTITION BY gid ORDER BY v) AS cum_n,
           sum(w) OVER (PARTITION BY gid ORDER BY v) AS cum_w,
           sum(n) OVER (PARTITION BY gid) AS tot_n,
           sum(w) OVER (PARTITION BY gid) AS tot_w
    FROM grouped
),
qs AS (SELECT unnest($quantiles::DOUBLE[]) AS q),
quant AS (
    SELECT c.gid, qs.q,
           min(c.v) FILTER (WHERE c.cum_n > floor((c.tot_n - 1) * qs.q)) AS lo,
           min(c.v) FILTER (WHERE c.cum_n > floor((c.tot_n - 1) * qs.q) + 1) AS hi,
           any_value((c.tot_n - 1) * qs.q - floor((c.tot_n - 1) * qs.q)) AS frac,
           min(c.v) FILTER (WHERE c.cum_w::DOUBLE / nullif(c.tot_w, 0) >= qs.q) AS wq
    FROM cum AS c CROSS JOIN qs
    GROUP BY c.gid, qs.q
),
qagg AS (
    SELECT gid,
           list(CASE
                    WHEN hi IS NULL THEN lo
                    WHEN frac >= 0.5 THEN hi - (hi - lo) * (1 - frac)
                    ELSE lo + (hi - lo) * frac
                END ORDER BY q) AS pct_jobs,
           list(wq ORDER BY q) AS pct_gpu_s
    FROM quant
    GROUP BY gid
),
ths AS (SELECT unnest($thresholds::DOUBLE[]) AS t),
below AS (
    SELECT g.gid, ths.t,
           coalesce(sum(g.n) FILTER (WHERE g.v < ths.t), 0) AS n_below,
           coalesce(sum(g.w) FILTER (WHERE g.v < ths.t), 0) AS w_below
    FROM grouped AS g CROSS JOIN ths
    GROUP BY g.gid, ths.t
),
bagg AS (
    SELECT gid, list(n_below ORDER BY t) AS n_below, list(w_below ORDER BY t) AS w_below
    FROM below
    GROUP BY gid
),
stats AS (
    SELECT gid, {{keys}},
           sum(n) AS jobs,
           sum(w) AS gpu_s,
           sum(v * n) / sum(n) AS mean_jobs,
           sum(v * w) / nullif(sum(w), 0) AS mean_gpu_s,
           min(fs) AS fair_share,
           coalesce(sum(n) FILTER (WHERE fs IS NOT NULL), 0) AS n_fs_known,
           coalesce(sum(n) FILTER (WHERE v < fs), 0) AS n_below_fs,
           coalesce(sum(w) FILTER (WHERE fs IS NOT NULL), 0) AS w_fs_known,
           coalesce(sum(w) FILTER (WHERE v < fs), 0) AS w_below_fs
    FROM grouped
    GROUP BY ALL
)
-- One row per group, plus one row (gid NULL) whose `excluded` lists {reason, jobs}.
SELECT s.*, q.pct_jobs, q.pct_gpu_s, b.n_below, b.w_below,
       NULL::STRUCT(reason VARCHAR, jobs HUGEINT)[] AS excluded
FROM stats AS s
JOIN qagg AS q USING (gid)
LEFT JOIN bagg AS b USING (gid)
UNION ALL BY NAME
SELECT (SELECT coalesce(list({'reason': reason, 'jobs': jobs} ORDER BY reason), [])
        FROM excl) AS excluded

-- ratios/summary: per group, jobs, GPU-seconds, percentiles, mean, shares below thresholds and
-- below the node types' fair share (the facts' fs: ratio_fair_share of the job's cluster and GPU
-- type). Placeholders: facts (ratios/jobs_facts or a cube's facts) and keys (the quoted group
-- key columns: fixed names chosen in advisor.ratios, never user text).
-- Parameters: those of ratios/jobs_facts, plus $quantiles and $thresholds (DOUBLE[]) and
-- $by_gpu_s (percentiles by GPU-seconds, else by jobs).
--
-- Percentiles are computed from the exact distinct-value counts of each group, so they are
-- exact, not approximated:
--   by jobs: linear interpolation between order statistics (numpy's default "linear",
--     DuckDB's quantile_cont): h = (n - 1) q, x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h]);
--   by GPU-seconds: the weighted inverted CDF (numpy.percentile(method="inverted_cdf",
--     weights=...)): the smallest ratio whose cumulative GPU-second share reaches q.
-- Each group carries its CDF as one short list (its ratios in ascending order with running job
-- and GPU-second totals); percentiles and shares below thresholds are read off that list: a
-- few list operations per group, where windows and joins over every (group, ratio) row made
-- summaries of thousands of groups (users) slow.
WITH facts AS (
{{facts}}
),
agg AS MATERIALIZED (
    -- one pass over the facts: counted jobs by ratio and fair share, excluded jobs by reason
    SELECT {{keys}}, CASE WHEN f.excluded_reason IS NULL THEN f.v END AS v, f.fs,
           f.excluded_reason AS _reason, sum(f.n) AS n, sum(f.w) AS w
    FROM facts AS f
    GROUP BY ALL
),
excl AS (
    SELECT _reason AS reason, sum(n) AS jobs FROM agg WHERE _reason IS NOT NULL GROUP BY _reason
),
stats AS (
    SELECT {{keys}},
           sum(n) AS jobs,
           sum(w) AS gpu_s,
           sum(v * n) / sum(n) AS mean_jobs,
           sum(v * w) / nullif(sum(w), 0) AS mean_gpu_s,
           min(fs) AS fair_share,
           coalesce(sum(n) FILTER (WHERE fs IS NOT NULL), 0) AS n_fs_known,
           coalesce(sum(n) FILTER (WHERE v < fs), 0) AS n_below_fs,
           coalesce(sum(w) FILTER (WHERE fs IS NOT NULL), 0) AS w_fs_known,
           coalesce(sum(w) FILTER (WHERE v < fs), 0) AS w_below_fs,
           -- ascending ratios (a ratio seen with two fair shares appears twice, next to each
           -- other); sorting the short list costs less than an ordered aggregate
           list_sort(list({'v': v, 'n': n, 'w': w})) AS vals
    FROM agg
    WHERE _reason IS NULL
    GROUP BY ALL
),
cdfs AS (
    -- the group's ratios in ascending order with running job and GPU-second totals (a
    -- list per group: a window over every ratio of every group cost far more)
    SELECT * EXCLUDE (vals),
           list_transform(vals, (e, i) -> {
               'v': e.v,
               'cn': list_sum(list_transform(vals[1:i], x -> x.n)),
               'cw': list_sum(list_transform(vals[1:i], x -> x.w))
           }) AS cdf
    FROM stats
),
below AS (
    -- per threshold, the last CDF entry below it (NULL: none), read once for both weights
    SELECT * EXCLUDE (cdf),
           -- the percentiles of the report's weight only ($by_gpu_s)
           CASE WHEN $by_gpu_s THEN
               -- NaN, not NULL, where no GPU-seconds weigh (a list without NULLs is fetched as
               -- a plain array)
               list_transform($quantiles::DOUBLE[],
                   q -> coalesce(list_filter(cdf, e -> e.cw::DOUBLE / nullif(gpu_s, 0) >= q)[1].v,
                                 'NaN'::DOUBLE))
           ELSE
               -- by jobs: x_lo, x_hi = the ratios of order statistics floor(h) and floor(h) + 1
               -- (0-based): the first ratios whose running job count exceeds them, both read
               -- off one filtered list (x_hi is x_lo's entry again, or the next one: running
               -- counts rise strictly, every entry counting at least one job)
               list_transform($quantiles::DOUBLE[], q -> list_transform(
                   [{'h': (jobs - 1) * q, 'f': list_filter(cdf, e -> e.cn > floor((jobs - 1) * q))}],
                   p -> list_transform(
                       [{'h': p.h, 'lo': p.f[1].v,
                         'hi': CASE WHEN p.f[1].cn > floor(p.h) + 1 THEN p.f[1].v ELSE p.f[2].v END}],
                       x -> CASE
                           WHEN x.hi IS NULL THEN x.lo
                           WHEN x.h - floor(x.h) >= 0.5 THEN x.hi - (x.hi - x.lo) * (1 - (x.h - floor(x.h)))
                           ELSE x.lo + (x.hi - x.lo) * (x.h - floor(x.h))
                       END)[1])[1])
           END AS pct,
           list_transform($thresholds::DOUBLE[], t -> list_filter(cdf, e -> e.v < t)[-1]) AS below
    FROM cdfs
)
-- One row per group, plus one row (gid NULL) whose `excluded` lists {reason, jobs}.
-- Counts are returned as BIGINT and GPU-seconds as DOUBLE (exact below 2^53 s), not HUGEINT:
-- turning HUGEINT lists into Python objects cost more than computing them.
SELECT row_number() OVER (ORDER BY {{keys}}) AS gid, {{keys}},
       jobs::BIGINT AS jobs, gpu_s::DOUBLE AS gpu_s, mean_jobs, mean_gpu_s, fair_share,
       n_fs_known::BIGINT AS n_fs_known, n_below_fs::BIGINT AS n_below_fs,
       w_fs_known::DOUBLE AS w_fs_known, w_below_fs::DOUBLE AS w_below_fs,
       pct,
       list_transform(below, b -> coalesce(b.cn, 0))::BIGINT[] AS n_below,
       list_transform(below, b -> coalesce(b.cw, 0))::DOUBLE[] AS w_below,
       NULL::STRUCT(reason VARCHAR, jobs BIGINT)[] AS excluded
FROM below
UNION ALL BY NAME
SELECT (SELECT coalesce(list({'reason': reason, 'jobs': jobs::BIGINT} ORDER BY reason), [])
        FROM excl) AS excluded

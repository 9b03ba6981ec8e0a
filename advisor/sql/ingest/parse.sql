-- Parse records into typed values: the body of a SELECT over the src placeholder (one VARCHAR column per
-- canonical sacct field, plus line_no where known and `repaired`). The caller wraps it in
-- CREATE TABLE parsed AS / INSERT INTO parsed and substitutes the src placeholder (read_csv of the
-- file, or a table of records) and the raw_text placeholder (SQL rebuilding a record's text, kept only for
-- rejected records). Steps keep only what folding needs. `bad_field` names the first field of
-- an allocation line that could not be parsed.
-- Parameters: $cluster (used when the source has no Cluster), $tz (source time zone),
-- $atres_known (the source has an AllocTRES field: an empty one then means no allocation).
-- Plain string functions, not regular expressions, on the hot path (millions of rows); a check
-- that is rarely needed goes in a CASE (DuckDB evaluates every operand of AND / OR).
-- TRES strings are read by ing_tres (macros.sql), looked up first in ing_tres_lookup. The
-- <a_computed>, <r_computed>, <a_miss>, <r_miss> (advisor/ingest/stages.py: parse_sql) say
-- where ing_tres runs for the strings the lookup lacks: in a1 over every record, NULL for a
-- hit (the careful way, unless misses look rare: its lookup holds a sample's strings; inside
-- the CASE it would run without shared subexpressions, DuckDB does not extract them from a
-- CASE branch), or inside the CASE for the misses alone (the bulk insert: its lookup holds
-- every string of the file, and a1 would cost time even when every string is a hit).
WITH a0 AS (
    SELECT src.*, lk_a.s AS a_hit, lk_a.t AS a_lookup, lk_r.s AS r_hit, lk_r.t AS r_lookup
    FROM ({{src}}) AS src
    LEFT JOIN ing_tres_lookup AS lk_a ON lk_a.s = coalesce(src.alloctres, '')
    LEFT JOIN ing_tres_lookup AS lk_r ON lk_r.s = coalesce(src.reqtres, '')
), a1 AS (
    SELECT *,
        {{a_computed}} AS a_computed,
        {{r_computed}} AS r_computed
    FROM a0
), a AS (
    SELECT *,
        ing_id_text(jobid, jobidraw) AS id_txt,
        CASE WHEN a_hit IS NULL THEN {{a_miss}} ELSE a_lookup END AS ta,
        CASE WHEN r_hit IS NULL THEN {{r_miss}} ELSE r_lookup END AS tr
    FROM a1
), b AS (
    SELECT *,
        split_part(id_txt, '.', 1) AS alloc_txt,
        CASE WHEN contains(id_txt, '.') THEN split_part(id_txt, '.', 2) END AS step,
        nullif(split_part(jobidraw, '.', 1), '') AS raw_alloc_txt,
        coalesce(nullif(cluster, ''), $cluster) AS cl,
        ing_ts(submit, $tz) AS submit_ts,
        ing_ts(eligible, $tz) AS eligible_ts,
        ing_ts("start", $tz) AS start_ts,
        ing_ts("end", $tz) AS end_ts,
        coalesce(ing_uint(elapsedraw), ing_dur_s(elapsed)) AS elapsed_v,
        coalesce(ing_minutes_s(timelimitraw), ing_dur_s(timelimit)) AS timelimit_v,
        ing_count(nnodes) AS nnodes_v,
        ing_count(ncpus) AS ncpus_v,
        ing_count(alloccpus) AS alloccpus_v,
        ing_count(reqcpus) AS reqcpus_v,
        ing_uint(uid) AS uid_v,
        split_part(state, ' ', 1) AS state_word,
        -- usage (issue 23; NULL constants when the source has none): jobstats' summary
        -- is inflated in Python (advisor/ingest/usage.py), so only for 'JS1:' values
        ing_cpu_s(totalcpu) AS cpu_v,
        CASE WHEN starts_with(admincomment, 'JS1:') THEN ing_jobstats(admincomment) END AS js
    FROM a
), c AS (
    SELECT *,
        ing_uint(alloc_txt) AS plain_id,
        CASE WHEN contains(alloc_txt, '_') THEN split_part(alloc_txt, '_', 1) END AS arr_j,
        CASE WHEN contains(alloc_txt, '_') THEN split_part(alloc_txt, '_', 2) END AS arr_t,
        CASE WHEN contains(alloc_txt, '+') THEN split_part(alloc_txt, '+', 1) END AS het_j,
        CASE WHEN contains(alloc_txt, '+') THEN split_part(alloc_txt, '+', 2) END AS het_o,
        regexp_extract(coalesce(allocgres, ''), '(?:^|,)gpu(?::([^:,(]+))?:(\d+)(?:\(|,|$)', ['t', 'n']) AS agres,
        regexp_extract(coalesce(reqgres, ''), '(?:^|,)gpu(?::([^:,(]+))?:(\d+)(?:\(|,|$)', ['t', 'n']) AS rgres,
        -- ReqMem in MB: per CPU ('c') or per node ('n') scaled by their counts
        ing_mem_mb(CASE WHEN reqmem[-1:] IN ('c', 'n') THEN reqmem[:-2] ELSE reqmem END) * CASE right(reqmem, 1)
            WHEN 'c' THEN coalesce(reqcpus_v, 1)
            WHEN 'n' THEN coalesce(nnodes_v, 1) ELSE 1 END AS req_mem_v
    FROM b
), d AS (
    SELECT *,
        ing_uint(arr_j) AS arr_j_n,
        ing_uint(arr_t) AS arr_t_n,
        starts_with(coalesce(arr_t, ''), '[') AS arr_pending,
        ing_uint(het_j) AS het_j_n,
        ing_count(het_o) AS het_o_n
    FROM c
), e AS (
    SELECT *,
        plain_id IS NOT NULL
            OR (arr_j_n IS NOT NULL AND (arr_t_n IS NOT NULL OR arr_pending))
            OR (het_j_n IS NOT NULL AND het_o_n IS NOT NULL) AS id_ok,
        CASE WHEN raw_alloc_txt IS NOT NULL THEN ing_uint(raw_alloc_txt)
             WHEN plain_id IS NOT NULL THEN plain_id
             WHEN het_j_n IS NOT NULL THEN het_j_n + het_o_n
             WHEN arr_pending THEN arr_j_n
             -- an array task without JobIDRaw: a key of its own (strict.sql: ing_array_key)
             WHEN arr_j_n IS NOT NULL AND arr_t_n IS NOT NULL THEN ing_array_key(arr_j_n, arr_t_n)
        END AS job_id_raw,
        -- nothing allocated (cancelled or still pending): the source has AllocTRES, it is
        -- empty and no time ran. sacct still prints the requested NCPUS / NNodes then. A
        -- PENDING job holds nothing whatever the source has (AllocCPUS is its request then).
        ($atres_known AND ing_blank(alloctres) AND coalesce(elapsed_v, 0) = 0)
            OR coalesce(upper(state_word) = 'PENDING', FALSE) AS no_alloc
    FROM d
), u AS (
    -- usage values (issue 23) and whether each is implausible (issue 30: a usage fault nulls
    -- that value and keeps the job, usage_fault names the field)
    SELECT *,
        coalesce(TRY_CAST(coalesce(ta.untyped, ta.typed_sum, TRY_CAST(nullif(agres.n, '') AS BIGINT), 0) AS INTEGER), 0) AS gpus_v,
        ing_usage_mem(tresusageinmax) AS umem_t,
        ing_usage_mb(ing_usage_mem(tresusageinmax)) AS umem_v,
        ing_usage_val(tresusageinmax, 'gres/gpuutil') AS uutil_t,
        ing_udec(ing_usage_val(tresusageinmax, 'gres/gpuutil')) AS uutil_v,
        ing_usage_val(tresusageinmax, 'gres/gpumem') AS ugmem_t,
        ing_usage_mb(ing_usage_val(tresusageinmax, 'gres/gpumem')) AS ugmem_v,
        ing_usage_val(tresusageintot, 'gres/gpuutil') AS tutil_t,
        ing_udec(ing_usage_val(tresusageintot, 'gres/gpuutil')) AS tutil_v,
        ing_cpu_most(elapsed_v, coalesce(ta.cpu, ncpus_v, alloccpus_v)) AS cpu_most
    FROM e
), f AS (
    SELECT *,
        -- the first field that could not be parsed (allocation lines only; steps are folded)
        CASE
            WHEN id_txt IS NULL OR NOT id_ok OR (step IS NOT NULL AND step = '') THEN 'JobID'
            WHEN job_id_raw IS NULL THEN 'JobIDRaw'
            WHEN step IS NOT NULL THEN NULL
            WHEN ing_ts_bad(submit, submit_ts) THEN 'Submit'
            -- a submit time the source has but does not know: the job has no month (not 1970)
            WHEN submit IS NOT NULL AND submit_ts IS NULL THEN 'Submit'
            WHEN ing_ts_bad(eligible, eligible_ts) THEN 'Eligible'
            WHEN ing_ts_bad("start", start_ts) THEN 'Start'
            WHEN ing_ts_bad("end", end_ts) THEN 'End'
            WHEN elapsedraw IS NOT NULL AND ing_uint(elapsedraw) IS NULL THEN 'ElapsedRaw'
            WHEN CASE WHEN elapsedraw IS NOT NULL THEN FALSE WHEN elapsed_v IS NOT NULL THEN elapsed_v < 0
                      ELSE NOT ing_blank(elapsed)
                           AND NOT list_contains(['UNLIMITED', 'Partition_Limit', 'INVALID'], elapsed)
                 END THEN 'Elapsed'
            WHEN elapsedraw IS NOT NULL AND elapsed_v > ing_max_s() THEN 'ElapsedRaw'
            WHEN elapsed_v > ing_max_s() THEN 'Elapsed'
            WHEN timelimitraw IS NOT NULL AND NOT list_contains(['UNLIMITED', 'Partition_Limit'], timelimitraw)
                 AND (ing_minutes_s(timelimitraw) IS NULL OR ing_minutes_s(timelimitraw) > ing_max_s())
                 THEN 'TimelimitRaw'
            WHEN CASE WHEN timelimitraw IS NOT NULL THEN FALSE WHEN timelimit_v IS NOT NULL THEN timelimit_v < 0
                      ELSE NOT ing_blank(timelimit)
                           AND NOT list_contains(['UNLIMITED', 'Partition_Limit', 'INVALID'], timelimit)
                 END THEN 'Timelimit'
            WHEN timelimitraw IS NULL AND timelimit_v > ing_max_s() THEN 'Timelimit'
            WHEN CASE WHEN ing_blank(reqmem) THEN FALSE
                      ELSE req_mem_v IS NULL OR ing_mem_odd(req_mem_v) END THEN 'ReqMem'
            WHEN nnodes IS NOT NULL AND (nnodes_v IS NULL OR nnodes_v > ing_max_cpus()) THEN 'NNodes'
            WHEN ncpus IS NOT NULL AND (ncpus_v IS NULL OR ncpus_v > ing_max_cpus()) THEN 'NCPUS'
            WHEN alloccpus IS NOT NULL AND (alloccpus_v IS NULL OR alloccpus_v > ing_max_cpus())
                 THEN 'AllocCPUS'
            WHEN reqcpus IS NOT NULL AND reqcpus_v IS NULL THEN 'ReqCPUS'
            WHEN uid IS NOT NULL AND (uid_v IS NULL OR uid_v > ing_max_uid()) THEN 'UID'
            WHEN ta.no_pairs OR ta.cpu_bad OR ta.mem_bad OR ta.gpu_vals_bad OR ta.keys_bad
                 OR coalesce(ta.untyped, ta.typed_sum, 0) > ing_max_gpus()
                 OR coalesce(ta.cpu, 0) > ing_max_cpus()
                 OR ing_mem_odd(ta.mem_mb) OR ta.billing_bad THEN 'AllocTRES'
            WHEN tr.no_pairs OR tr.cpu_bad OR tr.mem_bad OR tr.gpu_vals_bad OR tr.keys_bad
                 OR coalesce(tr.untyped, tr.typed_sum, 0) > ing_max_gpus()
                 OR coalesce(tr.cpu, 0) > ing_max_cpus()
                 OR ing_mem_odd(tr.mem_mb) OR tr.billing_bad THEN 'ReqTRES'
            -- a NUL is no character of a job name: the line is binary or was cut mid-write
            WHEN contains(jobname, chr(0)) THEN 'JobName'
            WHEN contains("user", chr(0)) THEN 'User'
            WHEN contains(account, chr(0)) THEN 'Account'
            WHEN contains("partition", chr(0)) THEN 'Partition'
            WHEN contains("group", chr(0)) THEN 'Group'
            WHEN contains(qos, chr(0)) THEN 'QOS'
            WHEN contains(cluster, chr(0)) THEN 'Cluster'
            -- the GPU type comes from these; the submit line is shown and exported as text
            WHEN contains(alloctres, chr(0)) THEN 'AllocTRES'
            WHEN contains(reqtres, chr(0)) THEN 'ReqTRES'
            WHEN contains(allocgres, chr(0)) THEN 'AllocGRES'
            WHEN contains(submitline, chr(0)) THEN 'SubmitLine'
            -- (a CASE: the comparison runs only where both times are known)
            WHEN CASE WHEN end_ts IS NULL OR start_ts IS NULL THEN FALSE ELSE end_ts < start_ts END
                 THEN 'End'
            WHEN CASE WHEN state IS NULL THEN FALSE
                      WHEN ing_known_state(state_word) THEN FALSE
                      ELSE NOT regexp_full_match(state, '[A-Za-z_]+\+?( by -?\d+)?')
                 END THEN 'State'
        END AS bad_field,
        -- a usage-only field that is not a plausible value: what the job used is unknown, what
        -- it held is not, so the job is kept with that value NULL and a reject row names it
        CASE WHEN step IS NOT NULL THEN NULL
            WHEN totalcpu IS NOT NULL AND (ing_cpu_bad(totalcpu, cpu_v) OR cpu_v > cpu_most)
                 THEN 'TotalCPU'
            -- CPUTimeRAW is Elapsed x CPUs by definition: more than cpu_most is no such time
            WHEN cputimeraw IS NOT NULL AND NOT ing_blank(cputimeraw)
                 AND (ing_uint(cputimeraw) IS NULL OR ing_uint(cputimeraw) > cpu_most)
                 THEN 'CPUTimeRAW'
            WHEN CASE WHEN tutil_t IS NULL THEN FALSE ELSE tutil_v IS NULL OR tutil_v > 100.0 * greatest(gpus_v, 1) END
                 THEN 'TRESUsageInTot'
            WHEN CASE WHEN tresusageinmax IS NULL THEN FALSE
                      ELSE (umem_t IS NOT NULL AND (umem_v IS NULL OR ing_mem_odd(umem_v)))
                           OR (uutil_t IS NOT NULL AND (uutil_v IS NULL OR uutil_v > 100.0 * greatest(gpus_v, 1)))
                           OR (ugmem_t IS NOT NULL AND (ugmem_v IS NULL OR ing_mem_odd(ugmem_v))) END
                 THEN 'TRESUsageInMax'
            WHEN NOT ing_blank(exitcode) AND NOT regexp_full_match(exitcode, '[0-9]{1,10}:[0-9]{1,10}')
                 THEN 'ExitCode'
        END AS usage_fault
    FROM u
)
SELECT
    line_no, repaired, cl AS cluster, job_id_raw, alloc_txt AS job_id, step,
    coalesce(submit_ts, TIMESTAMP '1970-01-01 00:00:00') AS submit,
    arr_j_n AS array_job_id,
    arr_t_n AS array_task_id,
    het_j_n AS het_job_id,
    het_o_n AS het_job_offset,
    nullif("user", '') AS "user",
    uid_v AS uid,
    nullif("group", '') AS "group",
    nullif(account, '') AS account,
    nullif("partition", '') AS "partition",
    nullif(qos, '') AS qos,
    jobname AS job_name,
    -- an unknown state word is no state (state_raw keeps it; keys.py counts them)
    CASE WHEN ing_known_state(state_word) THEN upper(state_word) END AS state,
    nullif(state, '') AS state_raw,
    CASE WHEN usage_fault IS DISTINCT FROM 'ExitCode' THEN nullif(exitcode, '') END AS exit_code,
    eligible_ts AS eligible, start_ts AS "start", end_ts AS "end",
    -- no Elapsed / ElapsedRaw (or blank): the time between Start and End, when both are known
    coalesce(elapsed_v, CASE WHEN end_ts >= start_ts
                             THEN CAST(epoch(end_ts) - epoch(start_ts) AS BIGINT) END) AS elapsed_s,
    timelimit_v AS timelimit_s,
    CASE WHEN NOT no_alloc THEN coalesce(nnodes_v, ta.node) END AS nnodes,
    CASE WHEN NOT no_alloc THEN coalesce(ta.cpu, ncpus_v, alloccpus_v) END AS cpus,
    gpus_v AS gpus,
    -- (typed keys that name no type leave it unknown: AllocGRES is read only without them)
    CASE WHEN ta.typed_list IS NOT NULL OR ta.top_name IS NOT NULL THEN ta.top_name
         WHEN nullif(agres.t, '') IS NOT NULL THEN agres.t END AS gpu_type_raw,
    ta.typed_list,
    TRY_CAST(round(ta.mem_mb) AS BIGINT) AS mem_mb,
    ta.billing,
    ing_node_list(nodelist) AS node_list,
    coalesce(reqcpus_v, tr.cpu) AS req_cpus,
    -- (a request without GPUs asked for 0 of them: NULL only where no request is known)
    coalesce(TRY_CAST(coalesce(tr.untyped, tr.typed_sum, TRY_CAST(nullif(rgres.n, '') AS BIGINT)) AS INTEGER),
             CASE WHEN NOT ing_blank(reqtres) THEN 0 END) AS req_gpus,
    -- (TRY_CAST: an implausible value rejects the record, its row must not fail the file)
    TRY_CAST(round(req_mem_v) AS BIGINT) AS req_mem_mb,
    nullif(alloctres, '') AS alloc_tres,
    nullif(reqtres, '') AS req_tres,
    submitline AS submit_line,
    workdir AS work_dir,
    coalesce(contains(submitline, '--exclusive'), FALSE)
        OR coalesce(list_contains(['true', '1', 'yes'], lower(exclusive_hint)), FALSE) AS exclusive,
    -- usage: what the job used (issue 23); fold.sql adds its steps' and derives the mean
    -- (the bounds are the allocation's: steps are folded, usage_fault judges their sum's line)
    coalesce(CASE WHEN step IS NOT NULL OR cpu_v <= cpu_most THEN cpu_v END, js[1]) AS cpu_used_s,
    CASE WHEN step IS NOT NULL OR cpu_most IS NULL OR ing_uint(cputimeraw) <= cpu_most
         THEN ing_uint(cputimeraw) END AS cpu_time_alloc_s,
    -- (each implausible usage value NULL on its own: usage_fault names the first)
    CASE WHEN NOT ing_mem_odd(umem_v) THEN umem_v END AS mem_used_max_mb,
    CASE WHEN step IS NOT NULL OR tutil_v <= 100.0 * greatest(gpus_v, 1) THEN tutil_v END AS gpu_util_tot_pct,
    coalesce(js[3], CASE WHEN uutil_v <= 100.0 * greatest(gpus_v, 1) THEN uutil_v END) AS gpu_util_max_pct,
    coalesce(js[4], CASE WHEN NOT ing_mem_odd(ugmem_v) THEN ugmem_v END) AS gpu_mem_max_mb,
    js[2] AS js_util_mean_pct,
    CASE WHEN js IS NOT NULL THEN 'jobstats'
         WHEN cpu_v IS NOT NULL OR tresusageintot IS NOT NULL OR tresusageinmax IS NOT NULL
         THEN 'sacct' END AS usage_source,
    bad_field,
    usage_fault,
    CASE WHEN usage_fault = 'TRESUsageInMax' THEN array_to_string(list_filter([
        CASE WHEN umem_t IS NOT NULL AND (umem_v IS NULL OR ing_mem_odd(umem_v))
             THEN 'mem ' || umem_t || ' is not a finite amount of 0 to 2^40 MB' END,
        CASE WHEN uutil_t IS NOT NULL AND (uutil_v IS NULL OR uutil_v > 100.0 * greatest(gpus_v, 1))
             THEN 'gres/gpuutil ' || uutil_t || ' is not a percent of at most 100 per GPU' END,
        CASE WHEN ugmem_t IS NOT NULL AND (ugmem_v IS NULL OR ing_mem_odd(ugmem_v))
             THEN 'gres/gpumem ' || ugmem_t || ' is not a finite amount of 0 to 2^40 MB' END],
        x -> x IS NOT NULL), '; ')
         WHEN usage_fault = 'TotalCPU' AND cpu_v IS NOT NULL
         THEN 'TotalCPU ' || totalcpu || ' is more than its CPUs could use in its Elapsed (1.5 x (Elapsed + 1 min) x CPUs)'
         WHEN usage_fault = 'CPUTimeRAW' AND ing_uint(cputimeraw) IS NOT NULL
         THEN 'CPUTimeRAW ' || cputimeraw || ' is more than its CPUs have in its Elapsed (1.5 x (Elapsed + 1 min) x CPUs)'
         WHEN usage_fault = 'TRESUsageInTot' AND tutil_v IS NOT NULL
         THEN 'gres/gpuutil ' || tutil_t || ' is not a percent of at most 100 per GPU' END AS usage_why,
    CASE WHEN bad_field IS NOT NULL OR usage_fault IS NOT NULL THEN {{raw_text}} END AS raw_text
FROM f

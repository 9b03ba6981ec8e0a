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
WITH a AS (
    SELECT src.*,
        ing_id_text(jobid, jobidraw) AS id_txt,
        ',' || coalesce(alloctres, '') AS atres,
        ',' || coalesce(reqtres, '') AS rtres
    FROM ({{src}}) AS src
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
        coalesce(TRY_CAST(elapsedraw AS BIGINT), ing_dur_s(elapsed)) AS elapsed_v,
        coalesce(TRY_CAST(timelimitraw AS BIGINT) * 60, ing_dur_s(timelimit)) AS timelimit_v,
        TRY_CAST(nnodes AS INTEGER) AS nnodes_v,
        TRY_CAST(ncpus AS INTEGER) AS ncpus_v,
        TRY_CAST(alloccpus AS INTEGER) AS alloccpus_v,
        TRY_CAST(reqcpus AS INTEGER) AS reqcpus_v,
        TRY_CAST(uid AS BIGINT) AS uid_v,
        ing_tres_val(atres, 'cpu') AS a_cpu,
        ing_tres_val(atres, 'gres/gpu') AS a_gpu,
        ing_tres_val(atres, 'mem') AS a_mem,
        ing_tres_val(rtres, 'gres/gpu') AS r_gpu,
        -- the text after the first typed GPU key (NULL: none); a second one is rare
        CASE WHEN contains(atres, ',gres/gpu:') THEN substr(atres, instr(atres, ',gres/gpu:') + 10) END AS a_typed1,
        CASE WHEN contains(rtres, ',gres/gpu:') THEN substr(rtres, instr(rtres, ',gres/gpu:') + 10) END AS r_typed1,
        split_part(state, ' ', 1) AS state_word
    FROM a
), c AS (
    SELECT *,
        TRY_CAST(alloc_txt AS BIGINT) AS plain_id,
        CASE WHEN contains(alloc_txt, '_') THEN split_part(alloc_txt, '_', 1) END AS arr_j,
        CASE WHEN contains(alloc_txt, '_') THEN split_part(alloc_txt, '_', 2) END AS arr_t,
        CASE WHEN contains(alloc_txt, '+') THEN split_part(alloc_txt, '+', 1) END AS het_j,
        CASE WHEN contains(alloc_txt, '+') THEN split_part(alloc_txt, '+', 2) END AS het_o,
        -- typed GPUs: one type (the usual case) read with split_part, several with a regex
        CASE WHEN contains(a_typed1, ',gres/gpu:') THEN ing_typed_gpus(atres) END AS typed_list,
        CASE WHEN NOT contains(a_typed1, ',gres/gpu:') THEN split_part(a_typed1, '=', 1) END AS typed1_name,
        CASE WHEN NOT contains(a_typed1, ',gres/gpu:') THEN TRY_CAST(split_part(split_part(a_typed1, '=', 2), ',', 1) AS BIGINT) END AS typed1_n,
        CASE WHEN contains(r_typed1, ',gres/gpu:') THEN list_sum(list_transform(ing_typed_gpus(rtres), x -> x.n))
             ELSE TRY_CAST(split_part(split_part(r_typed1, '=', 2), ',', 1) AS BIGINT) END AS r_typed_sum,
        regexp_extract(coalesce(allocgres, ''), '(?:^|,)gpu(?::([^:,(]+))?:(\d+)(?:\(|,|$)', ['t', 'n']) AS agres,
        regexp_extract(coalesce(reqgres, ''), '(?:^|,)gpu(?::([^:,(]+))?:(\d+)(?:\(|,|$)', ['t', 'n']) AS rgres
    FROM b
), d AS (
    SELECT *,
        TRY_CAST(arr_j AS BIGINT) AS arr_j_n,
        TRY_CAST(arr_t AS BIGINT) AS arr_t_n,
        starts_with(coalesce(arr_t, ''), '[') AS arr_pending,
        TRY_CAST(het_j AS BIGINT) AS het_j_n,
        TRY_CAST(het_o AS INTEGER) AS het_o_n,
        CASE WHEN typed_list IS NOT NULL THEN list_sum(list_transform(typed_list, x -> x.n)) ELSE typed1_n END AS typed_sum,
        CASE WHEN typed_list IS NOT NULL
             THEN list_sort(list_transform(typed_list, x -> lpad(CAST(x.n AS VARCHAR), 10, '0') || chr(9) || x.name), 'DESC')[1]
        END AS top_typed
    FROM c
), e AS (
    SELECT *,
        plain_id IS NOT NULL
            OR (arr_j_n IS NOT NULL AND (arr_t_n IS NOT NULL OR arr_pending))
            OR (het_j_n IS NOT NULL AND het_o_n IS NOT NULL) AS id_ok,
        CASE WHEN raw_alloc_txt IS NOT NULL THEN TRY_CAST(raw_alloc_txt AS BIGINT)
             WHEN plain_id IS NOT NULL THEN plain_id
             WHEN het_j_n IS NOT NULL THEN het_j_n + het_o_n
             WHEN arr_pending THEN arr_j_n
        END AS job_id_raw,
        TRY_CAST(a_gpu AS BIGINT) AS untyped,
        TRY_CAST(a_cpu AS INTEGER) AS a_cpu_v,
        ing_mem_mb(a_mem) AS a_mem_v,
        TRY_CAST(r_gpu AS BIGINT) AS runtyped,
        -- nothing allocated (cancelled or still pending): the source has AllocTRES, it is
        -- empty and no time ran. sacct still prints the requested NCPUS / NNodes then.
        $atres_known AND ing_blank(alloctres) AND coalesce(elapsed_v, 0) = 0 AS no_alloc
    FROM d
), f AS (
    SELECT *,
        -- the first field that could not be parsed (allocation lines only; steps are folded)
        CASE
            WHEN id_txt IS NULL OR NOT id_ok OR (step IS NOT NULL AND step = '') THEN 'JobID'
            WHEN job_id_raw IS NULL THEN 'JobIDRaw'
            WHEN step IS NOT NULL THEN NULL
            WHEN ing_ts_bad(submit, submit_ts) THEN 'Submit'
            WHEN ing_ts_bad(eligible, eligible_ts) THEN 'Eligible'
            WHEN ing_ts_bad("start", start_ts) THEN 'Start'
            WHEN ing_ts_bad("end", end_ts) THEN 'End'
            WHEN elapsedraw IS NOT NULL AND TRY_CAST(elapsedraw AS BIGINT) IS NULL THEN 'ElapsedRaw'
            WHEN CASE WHEN elapsedraw IS NOT NULL THEN FALSE WHEN elapsed_v IS NOT NULL THEN elapsed_v < 0
                      ELSE NOT ing_blank(elapsed)
                           AND NOT list_contains(['UNLIMITED', 'Partition_Limit', 'INVALID'], elapsed)
                 END THEN 'Elapsed'
            WHEN timelimitraw IS NOT NULL AND NOT list_contains(['UNLIMITED', 'Partition_Limit'], timelimitraw)
                 AND TRY_CAST(timelimitraw AS BIGINT) IS NULL THEN 'TimelimitRaw'
            WHEN CASE WHEN timelimitraw IS NOT NULL THEN FALSE WHEN timelimit_v IS NOT NULL THEN timelimit_v < 0
                      ELSE NOT ing_blank(timelimit)
                           AND NOT list_contains(['UNLIMITED', 'Partition_Limit', 'INVALID'], timelimit)
                 END THEN 'Timelimit'
            WHEN nnodes IS NOT NULL AND nnodes_v IS NULL THEN 'NNodes'
            WHEN ncpus IS NOT NULL AND ncpus_v IS NULL THEN 'NCPUS'
            WHEN alloccpus IS NOT NULL AND alloccpus_v IS NULL THEN 'AllocCPUS'
            WHEN reqcpus IS NOT NULL AND reqcpus_v IS NULL THEN 'ReqCPUS'
            WHEN uid IS NOT NULL AND uid_v IS NULL THEN 'UID'
            WHEN nullif(alloctres, '') IS NOT NULL AND NOT contains(alloctres, '=') THEN 'AllocTRES'
            WHEN a_cpu IS NOT NULL AND a_cpu_v IS NULL THEN 'AllocTRES'
            WHEN a_mem IS NOT NULL AND a_mem_v IS NULL THEN 'AllocTRES'
            WHEN ing_gpu_vals_bad(atres) THEN 'AllocTRES'
            WHEN coalesce(untyped, typed_sum, 0) > 2147483647 THEN 'AllocTRES'
            WHEN nullif(reqtres, '') IS NOT NULL AND NOT contains(reqtres, '=') THEN 'ReqTRES'
            WHEN ing_gpu_vals_bad(rtres) THEN 'ReqTRES'
            WHEN CASE WHEN state IS NULL THEN FALSE
                      WHEN list_contains(['COMPLETED', 'CANCELLED', 'FAILED', 'TIMEOUT', 'RUNNING',
                          'PENDING', 'OUT_OF_MEMORY', 'NODE_FAIL', 'PREEMPTED', 'BOOT_FAIL', 'DEADLINE',
                          'REVOKED', 'REQUEUED', 'RESIZING', 'SUSPENDED', 'COMPLETING', 'REQUEUE_HOLD',
                          'REQUEUE_FED', 'SPECIAL_EXIT', 'STOPPED', 'SIGNALING', 'STAGE_OUT'],
                          upper(state_word)) THEN FALSE
                      ELSE NOT regexp_full_match(state, '[A-Za-z_]+\+?( by -?\d+)?')
                 END THEN 'State'
        END AS bad_field
    FROM e
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
    nullif(upper(state_word), '') AS state,
    nullif(state, '') AS state_raw,
    nullif(exitcode, '') AS exit_code,
    eligible_ts AS eligible, start_ts AS "start", end_ts AS "end",
    elapsed_v AS elapsed_s,
    timelimit_v AS timelimit_s,
    CASE WHEN NOT no_alloc THEN coalesce(nnodes_v, TRY_CAST(ing_tres_val(atres, 'node') AS INTEGER)) END AS nnodes,
    CASE WHEN NOT no_alloc THEN coalesce(a_cpu_v, ncpus_v, alloccpus_v) END AS cpus,
    coalesce(TRY_CAST(coalesce(untyped, typed_sum, TRY_CAST(nullif(agres.n, '') AS BIGINT), 0) AS INTEGER), 0) AS gpus,
    CASE WHEN typed_list IS NOT NULL THEN split_part(top_typed, chr(9), 2)
         WHEN typed1_name IS NOT NULL THEN typed1_name
         WHEN nullif(agres.t, '') IS NOT NULL THEN agres.t END AS gpu_type_raw,
    typed_list,
    CAST(round(a_mem_v) AS BIGINT) AS mem_mb,
    TRY_CAST(ing_tres_val(atres, 'billing') AS DOUBLE) AS billing,
    nullif(nodelist, '') AS node_list,
    -- (ReqTRES cpu read only where ReqCPUS is missing: coalesce reads its next operand lazily)
    coalesce(reqcpus_v, TRY_CAST(ing_tres_val(rtres, 'cpu') AS INTEGER)) AS req_cpus,
    TRY_CAST(coalesce(runtyped, r_typed_sum, TRY_CAST(nullif(rgres.n, '') AS BIGINT)) AS INTEGER) AS req_gpus,
    CAST(round(ing_mem_mb(CASE WHEN reqmem[-1:] IN ('c', 'n') THEN reqmem[:-2] ELSE reqmem END) * CASE right(reqmem, 1)
        WHEN 'c' THEN coalesce(reqcpus_v, 1)
        WHEN 'n' THEN coalesce(nnodes_v, 1) ELSE 1 END) AS BIGINT) AS req_mem_mb,
    nullif(alloctres, '') AS alloc_tres,
    nullif(reqtres, '') AS req_tres,
    submitline AS submit_line,
    workdir AS work_dir,
    coalesce(contains(submitline, '--exclusive'), FALSE)
        OR coalesce(list_contains(['true', '1', 'yes'], lower(exclusive_hint)), FALSE) AS exclusive,
    bad_field,
    CASE WHEN bad_field IS NOT NULL THEN {{raw_text}} END AS raw_text
FROM f

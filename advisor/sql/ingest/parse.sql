-- Parse every record of the temp view `src` (one VARCHAR column per canonical sacct field, plus
-- rid = read order and line_no where known) into typed values. Steps keep only what folding
-- needs. `bad_field`/`bad_reason` name the first field that could not be parsed.
-- Parameters: $cluster (used when the source has no Cluster), $tz (source time zone).
CREATE OR REPLACE TEMP TABLE parsed AS
WITH a AS (
    SELECT src.*,
        trim(coalesce(nullif(trim(jobid), ''), trim(jobidraw))) AS id_txt,
        trim(jobidraw) AS raw_txt
    FROM src
), b AS (
    SELECT *,
        split_part(id_txt, '.', 1) AS alloc_txt,
        CASE WHEN contains(id_txt, '.') THEN split_part(id_txt, '.', 2) END AS step,
        nullif(split_part(raw_txt, '.', 1), '') AS raw_alloc_txt,
        coalesce(nullif(trim(cluster), ''), $cluster) AS cl
    FROM a
), c AS (
    SELECT *,
        regexp_extract(alloc_txt, '^(\d+)_(\d+)$', ['j', 't']) AS arr,
        regexp_extract(alloc_txt, '^(\d+)\+(\d+)$', ['j', 'o']) AS het,
        regexp_full_match(alloc_txt, '\d+_\[.*') AS arr_pending,
        regexp_full_match(alloc_txt, '\d+(_\d+|_\[.*|\+\d+)?') AS id_ok,
        coalesce(nullif(trim(alloctres), ''), '') AS atres,
        coalesce(nullif(trim(reqtres), ''), '') AS rtres
    FROM b
), d AS (
    SELECT *,
        CASE WHEN raw_alloc_txt IS NOT NULL THEN TRY_CAST(raw_alloc_txt AS BIGINT)
             WHEN regexp_full_match(alloc_txt, '\d+') THEN TRY_CAST(alloc_txt AS BIGINT)
             WHEN het.j <> '' THEN TRY_CAST(het.j AS BIGINT) + TRY_CAST(het.o AS BIGINT)
             WHEN arr_pending THEN TRY_CAST(split_part(alloc_txt, '_', 1) AS BIGINT)
        END AS job_id_raw,
        ing_typed_gpus(atres) AS typed,
        ing_typed_gpus(rtres) AS rtyped,
        regexp_extract(coalesce(allocgres, ''), '(?:^|,)gpu(?::([^:,(]+))?:(\d+)(?:\(|,|$)', ['t', 'n']) AS agres,
        regexp_extract(coalesce(reqgres, ''), '(?:^|,)gpu(?::([^:,(]+))?:(\d+)(?:\(|,|$)', ['t', 'n']) AS rgres,
        regexp_extract(atres, '(?:^|,)mem=([0-9]+(?:\.[0-9]+)?)([KMGTP]?)(?:,|$)', ['v', 'u']) AS amem,
        regexp_extract(trim(coalesce(reqmem, '')), '^([0-9]+(?:\.[0-9]+)?)([KMGTP]?)([cn]?)$', ['v', 'u', 'per']) AS rmem,
        ing_ts(submit, $tz) AS submit_ts,
        ing_ts(eligible, $tz) AS eligible_ts,
        ing_ts("start", $tz) AS start_ts,
        ing_ts("end", $tz) AS end_ts,
        coalesce(TRY_CAST(nullif(trim(elapsedraw), '') AS BIGINT), ing_dur_s(elapsed)) AS elapsed_s,
        coalesce(TRY_CAST(nullif(trim(timelimitraw), '') AS BIGINT) * 60, ing_dur_s(timelimit)) AS timelimit_s,
        trim(state) AS state_raw
    FROM c
), e AS (
    SELECT *,
        list_sum(list_transform(typed, x -> x.n)) AS typed_sum,
        list_sort(list_transform(typed, x -> lpad(CAST(x.n AS VARCHAR), 10, '0') || chr(9) || x.name), 'DESC')[1] AS top_typed,
        ing_tres_num(atres, 'gres/gpu') AS untyped,
        ing_tres_num(atres, 'cpu') AS tres_cpu,
        ing_tres_num(rtres, 'cpu') AS rtres_cpu,
        ing_tres_num(rtres, 'gres/gpu') AS runtyped,
        list_sum(list_transform(rtyped, x -> x.n)) AS rtyped_sum
    FROM d
)
SELECT
    rid, line_no, cl AS cluster, job_id_raw, alloc_txt AS job_id, step,
    coalesce(submit_ts, TIMESTAMP '1970-01-01 00:00:00') AS submit,
    TRY_CAST(nullif(CASE WHEN arr_pending THEN split_part(alloc_txt, '_', 1) ELSE arr.j END, '') AS BIGINT) AS array_job_id,
    TRY_CAST(nullif(arr.t, '') AS BIGINT) AS array_task_id,
    TRY_CAST(nullif(het.j, '') AS BIGINT) AS het_job_id,
    TRY_CAST(nullif(het.o, '') AS INTEGER) AS het_job_offset,
    nullif(trim("user"), '') AS "user",
    TRY_CAST(nullif(trim(uid), '') AS BIGINT) AS uid,
    nullif(trim("group"), '') AS "group",
    nullif(trim(account), '') AS account,
    nullif(trim("partition"), '') AS "partition",
    nullif(trim(qos), '') AS qos,
    jobname AS job_name,
    nullif(upper(split_part(state_raw, ' ', 1)), '') AS state,
    nullif(state_raw, '') AS state_raw,
    nullif(trim(exitcode), '') AS exit_code,
    eligible_ts AS eligible, start_ts AS "start", end_ts AS "end",
    elapsed_s, timelimit_s,
    coalesce(TRY_CAST(nullif(trim(nnodes), '') AS INTEGER), TRY_CAST(ing_tres_num(atres, 'node') AS INTEGER)) AS nnodes,
    coalesce(TRY_CAST(tres_cpu AS INTEGER),
             TRY_CAST(nullif(trim(coalesce(ncpus, alloccpus)), '') AS INTEGER)) AS cpus,
    coalesce(TRY_CAST(coalesce(untyped, typed_sum, TRY_CAST(nullif(agres.n, '') AS BIGINT), 0) AS INTEGER), 0) AS gpus,
    CASE WHEN len(typed) > 0 THEN split_part(top_typed, chr(9), 2)
         WHEN nullif(agres.t, '') IS NOT NULL THEN agres.t END AS gpu_type_raw,
    CASE WHEN len(typed) > 1 THEN typed END AS typed_list,
    CAST(round(ing_mem_mb(nullif(amem.v, ''), amem.u)) AS BIGINT) AS mem_mb,
    ing_tres_num(atres, 'billing') AS billing,
    nullif(trim(nodelist), '') AS node_list,
    coalesce(TRY_CAST(nullif(trim(reqcpus), '') AS INTEGER), TRY_CAST(rtres_cpu AS INTEGER)) AS req_cpus,
    TRY_CAST(coalesce(runtyped, rtyped_sum, TRY_CAST(nullif(rgres.n, '') AS BIGINT)) AS INTEGER) AS req_gpus,
    CAST(round(ing_mem_mb(nullif(rmem.v, ''), rmem.u) * CASE rmem.per
        WHEN 'c' THEN coalesce(TRY_CAST(nullif(trim(reqcpus), '') AS INTEGER), 1)
        WHEN 'n' THEN coalesce(TRY_CAST(nullif(trim(nnodes), '') AS INTEGER), 1) ELSE 1 END) AS BIGINT) AS req_mem_mb,
    nullif(atres, '') AS alloc_tres,
    nullif(rtres, '') AS req_tres,
    submitline AS submit_line,
    workdir AS work_dir,
    coalesce(regexp_matches(coalesce(submitline, ''), '(^|\s)--exclusive(\s|=|$)'), FALSE)
        OR coalesce(lower(trim(exclusive_hint)) IN ('true', '1', 'yes'), FALSE) AS exclusive,
    -- the first field that could not be parsed (allocation lines only; steps are folded)
    CASE
        WHEN NOT id_ok OR (step IS NOT NULL AND step = '') THEN 'JobID'
        WHEN job_id_raw IS NULL AND raw_alloc_txt IS NOT NULL THEN 'JobIDRaw'
        WHEN job_id_raw IS NULL THEN 'JobIDRaw'
        WHEN step IS NOT NULL THEN NULL
        WHEN ing_ts_bad(submit, $tz) THEN 'Submit'
        WHEN ing_ts_bad(eligible, $tz) THEN 'Eligible'
        WHEN ing_ts_bad("start", $tz) THEN 'Start'
        WHEN ing_ts_bad("end", $tz) THEN 'End'
        WHEN nullif(trim(elapsedraw), '') IS NOT NULL AND TRY_CAST(trim(elapsedraw) AS BIGINT) IS NULL THEN 'ElapsedRaw'
        WHEN ing_dur_bad(elapsed) THEN 'Elapsed'
        WHEN nullif(trim(timelimitraw), '') IS NOT NULL AND trim(timelimitraw) NOT IN ('UNLIMITED', 'Partition_Limit')
             AND TRY_CAST(trim(timelimitraw) AS BIGINT) IS NULL THEN 'TimelimitRaw'
        WHEN ing_dur_bad(timelimit) THEN 'Timelimit'
        WHEN nullif(trim(nnodes), '') IS NOT NULL AND TRY_CAST(trim(nnodes) AS INTEGER) IS NULL THEN 'NNodes'
        WHEN nullif(trim(ncpus), '') IS NOT NULL AND TRY_CAST(trim(ncpus) AS INTEGER) IS NULL THEN 'NCPUS'
        WHEN nullif(trim(alloccpus), '') IS NOT NULL AND TRY_CAST(trim(alloccpus) AS INTEGER) IS NULL THEN 'AllocCPUS'
        WHEN nullif(trim(reqcpus), '') IS NOT NULL AND TRY_CAST(trim(reqcpus) AS INTEGER) IS NULL THEN 'ReqCPUS'
        WHEN nullif(trim(uid), '') IS NOT NULL AND TRY_CAST(trim(uid) AS BIGINT) IS NULL THEN 'UID'
        WHEN ing_tres_bad(atres) THEN 'AllocTRES'
        WHEN ing_tres_has(atres, 'cpu') AND TRY_CAST(tres_cpu AS INTEGER) IS NULL THEN 'AllocTRES'
        WHEN ing_tres_has(atres, 'mem') AND amem.v = '' THEN 'AllocTRES'
        WHEN ing_gpu_vals_bad(atres) THEN 'AllocTRES'
        WHEN coalesce(untyped, typed_sum, 0) > 2147483647 THEN 'AllocTRES'
        WHEN ing_tres_bad(rtres) THEN 'ReqTRES'
        WHEN ing_gpu_vals_bad(rtres) THEN 'ReqTRES'
        WHEN state_raw IS NOT NULL AND state_raw <> ''
             AND NOT regexp_full_match(state_raw, '[A-Za-z_]+\+?( by -?\d+)?') THEN 'State'
    END AS bad_field
FROM e;

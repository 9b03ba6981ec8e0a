-- Parsing helpers for the ingest SQL (temporary macros, created once per connection). They use
-- plain string functions (split_part, contains) rather than regular expressions: they run on
-- every field of millions of records.
-- Blank: what sacct prints for "no value" (read_csv already turns '' into NULL).
-- (list_contains, not IN: an IN list becomes a join per use.)
CREATE OR REPLACE TEMP MACRO ing_blank(x) AS
    x IS NULL OR list_contains(['', 'Unknown', 'unknown', 'None', 'N/A', '(null)', 'NONE'], x);
-- The job id as sacct shows it (JobID, else JobIDRaw), and whether a record is a step (a dot
-- in it): parse.sql, prescan.sql and the bulk load's line filters all decide it here.
CREATE OR REPLACE TEMP MACRO ing_id_text(jobid, jobidraw) AS coalesce(nullif(jobid, ''), jobidraw);
CREATE OR REPLACE TEMP MACRO ing_is_step(jobid, jobidraw) AS contains(ing_id_text(jobid, jobidraw), '.');
-- A time: 'YYYY-MM-DDTHH:MM:SS' (local to the source zone tz, converted to UTC) or epoch
-- seconds (SLURM_TIME_FORMAT=%s, UTC already); NULL when blank or unparsable.
CREATE OR REPLACE TEMP MACRO ing_ts_local(t, tz) AS
    CASE WHEN tz = 'UTC' THEN t ELSE timezone('UTC', timezone(tz, t)) END;
CREATE OR REPLACE TEMP MACRO ing_ts_epoch(x) AS
    CASE WHEN ing_uint(x) > 0 AND ing_uint(x) < 100000000000
         THEN make_timestamp(ing_uint(x) * 1000000) END;
-- A time with a UTC offset (2024-03-01T10:00:00+02:00, ...Z: ISO 8601 as some exports and
-- converters write it) names its instant: converted by its offset, never by the source zone
-- (a cast to TIMESTAMP drops the offset). Only texts longer than a plain time are looked at.
CREATE OR REPLACE TEMP MACRO ing_ts_offset(x) AS
    CASE WHEN x IS NULL OR length(x) <= 19 THEN FALSE
         ELSE regexp_matches(x, '(Z|[+-]\d\d(:?\d\d)?)$') END;
CREATE OR REPLACE TEMP MACRO ing_ts(x, tz) AS
    coalesce(CASE WHEN ing_ts_offset(x) THEN CAST(timezone('UTC', TRY_CAST(x AS TIMESTAMPTZ)) AS TIMESTAMP)
                  ELSE ing_ts_local(TRY_CAST(x AS TIMESTAMP), tz) END,
             CASE WHEN NOT contains(x, '-') THEN ing_ts_epoch(x) END);
-- Bad: not blank, not a time, and not epoch 0 (Slurm's "unset" written as %s); a negative,
-- hex or out-of-range epoch is bad, and so is a time outside the plausible window
-- (strict.sql: ing_ts_odd).
-- (a CASE, not AND: DuckDB evaluates every operand of an AND in a projection, and nearly
-- every time parses, so the checks after it would run on millions of rows for nothing)
CREATE OR REPLACE TEMP MACRO ing_ts_bad(x, ts) AS
    CASE WHEN ts IS NOT NULL THEN ing_ts_odd(ts) ELSE NOT ing_blank(x) AND x <> '0' END;
-- [D-][HH:]MM:SS[.mmm] -> seconds; NULL when blank, UNLIMITED-like or unparsable.
-- The usual shapes (HH:MM:SS, D-HH:MM:SS) go through DuckDB's INTERVAL cast (several times
-- faster than splitting); ing_dur_any takes every other shape, `rest` being x without 'D-'.
CREATE OR REPLACE TEMP MACRO ing_dur_any(x, rest) AS
    CASE WHEN ing_blank(x) OR list_contains(['UNLIMITED', 'Partition_Limit', 'INVALID'], x) THEN NULL
    -- (in DOUBLE, then TRY_CAST: a day or hour count of 18 digits must not overflow BIGINT)
    ELSE TRY_CAST(
        CASE WHEN contains(x, '-') THEN CAST(ing_uint(split_part(x, '-', 1)) AS DOUBLE) ELSE 0 END * 86400
        + CASE length(rest) - length(replace(rest, ':', ''))
            WHEN 2 THEN CAST(ing_uint(split_part(rest, ':', 1)) AS DOUBLE) * 3600
                      + CAST(ing_uint(split_part(rest, ':', 2)) AS DOUBLE) * 60
                      + ing_udec(split_part(rest, ':', 3))
            WHEN 1 THEN CASE WHEN contains(x, '-')
                             THEN CAST(ing_uint(split_part(rest, ':', 1)) AS DOUBLE) * 3600
                                  + CAST(ing_uint(split_part(rest, ':', 2)) AS DOUBLE) * 60
                             ELSE CAST(ing_uint(split_part(rest, ':', 1)) AS DOUBLE) * 60
                                  + ing_udec(split_part(rest, ':', 2)) END
            WHEN 0 THEN CASE WHEN contains(x, '-') THEN CAST(ing_uint(rest) AS DOUBLE) * 3600 END
          END AS BIGINT)
    END;
CREATE OR REPLACE TEMP MACRO ing_dur_rest(x) AS
    CASE WHEN contains(x, '-') THEN split_part(x, '-', 2) ELSE x END;
CREATE OR REPLACE TEMP MACRO ing_hms_s(t) AS
    CAST(epoch(TRY_CAST(t AS INTERVAL)) AS BIGINT);
CREATE OR REPLACE TEMP MACRO ing_dur_s(x) AS
    CASE WHEN length(x) = 8 AND x[3] = ':' AND x[6] = ':'
              AND regexp_full_match(x, '[0-9:]*') THEN ing_hms_s(x)
         WHEN length(x) BETWEEN 10 AND 14 AND x[-9] = '-' AND x[-6] = ':' AND x[-3] = ':'
              AND regexp_full_match(x, '[0-9:-]*') AND ing_uint(x[1:-10]) >= 0
             THEN ing_uint(x[1:-10]) * 86400 + ing_hms_s(x[-8:])
         ELSE ing_dur_any(x, ing_dur_rest(x)) END;
-- The value of TRES key `key` (matched as a whole key: ',cpu=' never matches ',gres/cpu=').
-- `s` is the TRES string with a leading comma.
CREATE OR REPLACE TEMP MACRO ing_tres_val(s, key) AS
    nullif(split_part(split_part(s, ',' || key || '=', 2), ',', 1), '');
-- Memory '64G', '2.50G', '374000M', '512K' (MB based, as sacct prints TRES mem) -> MB.
-- G and M (nearly every value) by slicing off the unit; rtrim is several times slower.
CREATE OR REPLACE TEMP MACRO ing_mem_any(v) AS
    ing_udec(rtrim(v, 'KMGTPkmgtp')) * CASE upper(right(v, 1))
        WHEN 'K' THEN 1.0 / 1024 WHEN 'G' THEN 1024 WHEN 'T' THEN 1024 * 1024
        WHEN 'P' THEN 1024 * 1024 * 1024 ELSE 1 END;
CREATE OR REPLACE TEMP MACRO ing_mem_mb(v) AS
    CASE v[-1:] WHEN 'G' THEN ing_udec(v[:-2]) * 1024
                WHEN 'M' THEN ing_udec(v[:-2])
                ELSE ing_mem_any(v) END;
-- Typed GPU entries of a TRES string (several types): [{name, n}]; never gpumem/gpuutil.
CREATE OR REPLACE TEMP MACRO ing_typed_gpus(s) AS
    list_transform(regexp_extract_all(s, ',gres/gpu:[^=,]+=[0-9]+'),
        e -> {'name': split_part(split_part(e, 'gres/gpu:', 2), '=', 1),
              'n': TRY_CAST(split_part(e, '=', 2) AS BIGINT)});
-- GPU values that are not whole numbers (gres/gpu=abc, gres/gpu:h100=1x, gres/gpu=) or have
-- 19 digits or more (too large for a count: parse.sql rejects any above 2^31 - 1, and these
-- would not even read as BIGINT).
CREATE OR REPLACE TEMP MACRO ing_gpu_vals_bad(s) AS
    CASE WHEN contains(s, ',gres/gpu')
         THEN regexp_matches(s, ',gres/gpu(?::[^=,]*)?=(?:[0-9]*[^0-9,]|,|$|[0-9]{19})') ELSE FALSE END;
-- Everything the parser reads from one TRES string (AllocTRES or ReqTRES; NULL reads as ''):
-- its values, and whether each is malformed. parse.sql looks a string up in ing_tres_lookup
-- first (a file has a few hundred distinct TRES strings for millions of records) and calls this
-- only for a string the lookup lacks. `typed1`: the text after the first typed GPU key (NULL: none; a
-- second one, rare, is read with a regex).
CREATE OR REPLACE TEMP MACRO ing_tres_typed(raw, s, typed1) AS {
    -- a non-blank string without a single key=value
    'no_pairs': nullif(raw, '') IS NOT NULL AND NOT contains(raw, '='),
    'cpu': ing_count(ing_tres_val(s, 'cpu')),
    'cpu_bad': ing_tres_val(s, 'cpu') IS NOT NULL AND ing_count(ing_tres_val(s, 'cpu')) IS NULL,
    'mem_mb': ing_mem_mb(ing_tres_val(s, 'mem')),
    'mem_bad': ing_tres_val(s, 'mem') IS NOT NULL AND ing_mem_mb(ing_tres_val(s, 'mem')) IS NULL,
    'gpu_vals_bad': ing_gpu_vals_bad(s),
    -- GPUs under the untyped key, and the sum of the typed keys
    -- a GPU key with an empty type (gres/gpu:=4), or any key twice (gres/gpu=2,gres/gpu=4):
    -- which value would be the allocation is unknowable
    'keys_bad': contains(s, ',gres/gpu:=') OR coalesce(
        len(list_distinct(list_transform(string_split(nullif(raw, ''), ','), e -> split_part(e, '=', 1))))
        < len(string_split(nullif(raw, ''), ',')), FALSE),
    'untyped': ing_uint(ing_tres_val(s, 'gres/gpu')),
    'typed_sum': CASE WHEN contains(typed1, ',gres/gpu:')
                      THEN list_sum(list_transform(ing_typed_gpus(s), x -> x.n))
                      ELSE ing_uint(split_part(split_part(typed1, '=', 2), ',', 1)) END,
    -- several typed keys: each {name, n}, and the name with the most GPUs (ties: the last name)
    'typed_list': CASE WHEN contains(typed1, ',gres/gpu:') THEN ing_typed_gpus(s) END,
    'top_name': CASE WHEN contains(typed1, ',gres/gpu:') THEN split_part(list_sort(list_transform(
                    ing_typed_gpus(s), x -> lpad(CAST(x.n AS VARCHAR), 10, '0') || chr(9) || x.name),
                    'DESC')[1], chr(9), 2)
                    ELSE split_part(typed1, '=', 1) END,
    'node': ing_count(ing_tres_val(s, 'node')),
    'billing': ing_udec(ing_tres_val(s, 'billing')),
    'billing_bad': ing_tres_val(s, 'billing') IS NOT NULL
        AND coalesce(ing_udec(ing_tres_val(s, 'billing')) > ing_max_billing(), TRUE)
};
CREATE OR REPLACE TEMP MACRO ing_tres_of(raw, s) AS
    ing_tres_typed(raw, s, CASE WHEN contains(s, ',gres/gpu:') THEN substr(s, instr(s, ',gres/gpu:') + 10) END);
CREATE OR REPLACE TEMP MACRO ing_tres(raw) AS
    ing_tres_of(raw, ',' || coalesce(raw, ''));
-- Distinct TRES strings (s: NULL stored as '') with their ing_tres: filled before a text load
-- (tres_lookup.sql: the bulk path's prescan, the careful path's first records); an entry
-- stays true for any later load on the connection.
CREATE TEMP TABLE IF NOT EXISTS ing_tres_lookup AS
    SELECT '' AS s, ing_tres('') AS t, CAST(0 AS BIGINT) AS n LIMIT 0;
-- Interactive or not, from the evidence, strongest first: SubmitLine (salloc, srun --pty -> yes;
-- sbatch, srun -> no), an `.interactive` step (yes) or a `.batch` step (no), a shell-like job
-- name (yes); NULL when nothing tells. `cmd` is ing_cmd(submit_line); has_* come from steps.
-- (the first word without split_part, which splits the whole line)
CREATE OR REPLACE TEMP MACRO ing_first_word(s) AS
    CASE WHEN contains(s, ' ') THEN left(s, instr(s, ' ') - 1) ELSE s END;
CREATE OR REPLACE TEMP MACRO ing_cmd_any(submit_line) AS
    lower(parse_filename(ing_first_word(ltrim(coalesce(submit_line, ''))), false, 'forward_slash'));
-- (the three plain commands first: nearly every line starts with one)
CREATE OR REPLACE TEMP MACRO ing_cmd(submit_line) AS
    CASE WHEN starts_with(submit_line, 'sbatch ') THEN 'sbatch'
         WHEN starts_with(submit_line, 'srun ') THEN 'srun'
         WHEN starts_with(submit_line, 'salloc ') THEN 'salloc'
         ELSE ing_cmd_any(submit_line) END;
CREATE OR REPLACE TEMP MACRO ing_shell_name(job_name) AS
    list_contains(['interactive', 'bash', 'sh', 'zsh', 'tcsh', 'csh', 'fish', 'salloc', 'srun',
                   'login'], lower(trim(job_name)));
CREATE OR REPLACE TEMP MACRO ing_interactive(cmd, submit_line, has_interactive, has_batch, job_name) AS
    CASE WHEN cmd = 'salloc' THEN TRUE
         WHEN cmd = 'srun' AND contains(submit_line, '--pty') THEN TRUE
         WHEN cmd IN ('sbatch', 'srun') THEN FALSE
         WHEN has_interactive THEN TRUE
         WHEN has_batch THEN FALSE
         WHEN ing_shell_name(job_name) THEN TRUE
    END;
CREATE OR REPLACE TEMP MACRO ing_interactive_evidence(cmd, has_interactive, has_batch, job_name) AS
    CASE WHEN cmd IN ('salloc', 'srun', 'sbatch') THEN 'submit_line'
         WHEN has_interactive OR has_batch THEN 'step'
         WHEN ing_shell_name(job_name) THEN 'job_name'
    END;
-- Strength of interactive evidence (fold.sql): submit_line > step > job_name > none.
CREATE OR REPLACE TEMP MACRO ing_evidence_rank(e) AS
    coalesce(list_position(['job_name', 'step', 'submit_line'], e), 0);
-- Usage fields (issue 23). TotalCPU '[D-][HH:]MM:SS[.mmm]' (or plain seconds, as the JSON
-- reader writes it) -> seconds, a DOUBLE: sacct prints milliseconds, and a sleeping job's few
-- milliseconds are its evidence. Through DuckDB's INTERVAL cast (MM:SS gets its hours first),
-- several times faster than splitting; NULL when blank or not such text (ing_cpu_bad names it).
CREATE OR REPLACE TEMP MACRO ing_cpu_rest_s(r) AS
    CASE length(r) - length(replace(r, ':', ''))
        WHEN 0 THEN ing_udec(r)
        WHEN 1 THEN epoch(TRY_CAST('00:' || r AS INTERVAL))
        WHEN 2 THEN epoch(TRY_CAST(r AS INTERVAL)) END;
CREATE OR REPLACE TEMP MACRO ing_cpu_s(x) AS
    CASE WHEN NOT regexp_full_match(x, '[0-9:.-]*') OR x = '' THEN NULL
         -- D-HH[:MM[:SS]]: after the day, a lone number is hours
         WHEN contains(x, '-') THEN CAST(ing_uint(split_part(x, '-', 1)) AS DOUBLE) * 86400
             + ing_cpu_rest_s(split_part(x, '-', 2) || CASE length(x) - length(replace(x, ':', ''))
                                                      WHEN 0 THEN ':00:00' WHEN 1 THEN ':00' ELSE '' END)
         ELSE ing_cpu_rest_s(x) END;
CREATE OR REPLACE TEMP MACRO ing_cpu_bad(x, v) AS
    CASE WHEN v IS NOT NULL THEN FALSE ELSE NOT ing_blank(x) END;
-- A TRESUsageIn* value of key `key` (gres/gpuutil, gres/gpumem: names no other key ends in)
-- from the raw string, without building a copy of it; ing_usage_mem: the `mem` key (not vmem,
-- not gres/gpumem).
CREATE OR REPLACE TEMP MACRO ing_usage_val(s, key) AS
    nullif(split_part(split_part(s, key || '=', 2), ',', 1), '');
CREATE OR REPLACE TEMP MACRO ing_usage_mem(s) AS
    nullif(split_part(CASE WHEN starts_with(s, 'mem=') THEN s[5:] ELSE split_part(s, ',mem=', 2) END,
                      ',', 1), '');
-- A usage amount in MB: with a unit as sacct prints it (K/M/G/T, MB based), or a plain count
-- of bytes (what --json's consumed TRES and sacct's sub-KiB values carry). A plain cast, not
-- ing_udec: a measured amount is no key or count, and the strict check doubled its cost.
CREATE OR REPLACE TEMP MACRO ing_usage_mb(v) AS
    CASE right(v, 1)
        WHEN 'M' THEN TRY_CAST(v[:-2] AS DOUBLE)
        WHEN 'G' THEN TRY_CAST(v[:-2] AS DOUBLE) * 1024
        WHEN 'K' THEN TRY_CAST(v[:-2] AS DOUBLE) / 1024
        WHEN 'T' THEN TRY_CAST(v[:-2] AS DOUBLE) * 1048576
        ELSE TRY_CAST(v AS DOUBLE) / 1048576 END;

-- Parsing helpers for the ingest SQL (temporary macros, created once per connection).
-- Times: 'Unknown'/'None'/'' are NULL; epoch seconds (SLURM_TIME_FORMAT=%s) are UTC already;
-- 'YYYY-MM-DDTHH:MM:SS' is local to the source time zone `tz` and converted to UTC.
CREATE OR REPLACE TEMP MACRO ing_blank(x) AS
    x IS NULL OR trim(x) IN ('', 'Unknown', 'unknown', 'None', 'N/A', '(null)');
CREATE OR REPLACE TEMP MACRO ing_ts(x, tz) AS
    CASE WHEN ing_blank(x) THEN NULL
         WHEN regexp_full_match(trim(x), '-?\d{1,12}')
             THEN CASE WHEN TRY_CAST(trim(x) AS BIGINT) <= 0 THEN NULL
                       ELSE make_timestamp(TRY_CAST(trim(x) AS BIGINT) * 1000000) END
         WHEN tz = 'UTC' THEN try_strptime(trim(x), ['%Y-%m-%dT%H:%M:%S', '%Y-%m-%d %H:%M:%S'])
         ELSE timezone('UTC', timezone(tz, try_strptime(trim(x), ['%Y-%m-%dT%H:%M:%S', '%Y-%m-%d %H:%M:%S'])))
    END;
CREATE OR REPLACE TEMP MACRO ing_ts_bad(x, tz) AS
    NOT ing_blank(x) AND ing_ts(x, tz) IS NULL AND NOT regexp_full_match(trim(x), '-?\d{1,12}');
-- [D-][HH:]MM:SS[.mmm] -> seconds; NULL when blank or UNLIMITED-like.
CREATE OR REPLACE TEMP MACRO ing_dur_parts(x) AS
    regexp_extract(trim(x), '^(?:(\d{1,7})-)?(?:(\d{1,4}):)?(\d{1,4}):(\d{1,2})(?:\.\d+)?$', ['d', 'h', 'm', 's']);
CREATE OR REPLACE TEMP MACRO ing_dur_s(x) AS
    CASE WHEN ing_blank(x) OR trim(x) IN ('UNLIMITED', 'Partition_Limit', 'INVALID', 'NONE') THEN NULL
         WHEN regexp_full_match(trim(x), '\d{1,4}-\d{1,4}') -- D-HH
             THEN CAST(split_part(trim(x), '-', 1) AS BIGINT) * 86400
                  + CAST(split_part(trim(x), '-', 2) AS BIGINT) * 3600
         ELSE (SELECT CASE WHEN p.m = '' THEN NULL ELSE
                  coalesce(TRY_CAST(nullif(p.d, '') AS BIGINT), 0) * 86400
                  + coalesce(TRY_CAST(nullif(p.h, '') AS BIGINT), 0) * 3600
                  + CAST(p.m AS BIGINT) * 60 + CAST(p.s AS BIGINT) END
               FROM (SELECT ing_dur_parts(x) AS p) AS q(p))
    END;
CREATE OR REPLACE TEMP MACRO ing_dur_bad(x) AS
    NOT ing_blank(x) AND trim(x) NOT IN ('UNLIMITED', 'Partition_Limit', 'INVALID', 'NONE')
    AND ing_dur_s(x) IS NULL;
-- One integer TRES entry (`key` matched as a whole key, so gres/gpu never matches gres/gpumem).
CREATE OR REPLACE TEMP MACRO ing_tres_num(s, key) AS
    TRY_CAST(nullif(regexp_extract(s, '(?:^|,)' || key || '=([0-9]+(?:\.[0-9]+)?)(?:,|$)', 1), '') AS DOUBLE);
CREATE OR REPLACE TEMP MACRO ing_tres_has(s, key) AS
    regexp_matches(s, '(?:^|,)' || key || '=');
-- Memory with K/M/G/T/P (MB based, as sacct prints TRES mem) -> MB.
CREATE OR REPLACE TEMP MACRO ing_mem_mb(v, u) AS
    TRY_CAST(v AS DOUBLE) * CASE upper(u) WHEN 'K' THEN 1.0 / 1024 WHEN 'G' THEN 1024
        WHEN 'T' THEN 1024 * 1024 WHEN 'P' THEN 1024 * 1024 * 1024 ELSE 1 END;
-- Typed GPU entries of a TRES string: [{name, n}] (gres/gpu:TYPE=N; not gpumem/gpuutil).
CREATE OR REPLACE TEMP MACRO ing_typed_gpus(s) AS
    list_transform(regexp_extract_all(s, '(?:^|,)gres/gpu:[^=,]+=[0-9]+'),
        e -> {'name': regexp_extract(e, 'gres/gpu:([^=]+)=', 1),
              'n': TRY_CAST(regexp_extract(e, '=([0-9]+)$', 1) AS BIGINT)});
-- A TRES string that is not a comma list of key=value.
CREATE OR REPLACE TEMP MACRO ing_tres_bad(s) AS
    NOT ing_blank(s) AND NOT regexp_full_match(trim(s), '[^,=]+=[^,=]*(,[^,=]+=[^,=]*)*');
-- GPU values that are not whole numbers (gres/gpu=abc, gres/gpu:h100=1x).
CREATE OR REPLACE TEMP MACRO ing_gpu_vals_bad(s) AS
    len(list_filter(regexp_extract_all(s, '(?:^|,)gres/gpu(?::[^=,]+)?=([^,]*)', 1),
        v -> NOT regexp_full_match(v, '[0-9]{1,9}'))) > 0;

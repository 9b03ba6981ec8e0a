-- Strict numbers for the ingest SQL (temporary macros, created before macros.sql). DuckDB's
-- casts accept far more than sacct prints: '2353407_3' (digit separator) reads 23534073,
-- '0x20' reads 32, '1e3' 1000, '+5', '-5', ' 12 ' and '3.5' (rounded to 4) read as integers.
-- An id, a count, a duration part or an epoch is plain digits, nothing else: these macros
-- cast only such text and give NULL for the rest (the parser then rejects the field).
-- A full match of a character class, not ltrim with a character set: they run on several
-- fields of every record, and DuckDB's ltrim with a set is several times slower.
-- Plain digits -> BIGINT (NULL for anything else, '' included, and beyond BIGINT's range).
CREATE OR REPLACE TEMP MACRO ing_uint(x) AS
    CASE WHEN regexp_full_match(x, '[0-9]*') THEN TRY_CAST(x AS BIGINT) END;
-- Plain digits with at most one decimal point ('2.50', '64', '.5') -> DOUBLE.
CREATE OR REPLACE TEMP MACRO ing_udec(x) AS
    CASE WHEN regexp_full_match(x, '[0-9]*\.?[0-9]*') THEN TRY_CAST(x AS DOUBLE) END;
-- A count that fits the INTEGER columns (CPUs, nodes): NULL beyond 2^31 - 1 (TRY_CAST: one
-- ing_uint, where a CASE on its value would run it twice).
CREATE OR REPLACE TEMP MACRO ing_count(x) AS
    TRY_CAST(ing_uint(x) AS INTEGER);
-- The key of an array task whose raw id the source lacks (JobID `123_45` without JobIDRaw):
-- negative, so it never meets a real raw id, and built from the array job id and the task id
-- (Slurm's MaxArraySize is at most 4000001, below 2^22). keys.py (rekey_source.sql) puts the
-- real raw id in its place when a source brings it. NULL (a JobIDRaw reject) out of range.
CREATE OR REPLACE TEMP MACRO ing_array_key(j, t) AS
    CASE WHEN t < 4194304 AND j < 2199023255552 THEN -(j * 4194304 + t) END;
-- Slurm's job state words (base states and the flags sacct prints as a state). Another word
-- (`FOO`) is stored as a NULL state with state_raw kept, and counted in the load's summary.
CREATE OR REPLACE TEMP MACRO ing_known_state(w) AS
    list_contains(['COMPLETED', 'CANCELLED', 'FAILED', 'TIMEOUT', 'RUNNING', 'PENDING',
        'OUT_OF_MEMORY', 'NODE_FAIL', 'PREEMPTED', 'BOOT_FAIL', 'DEADLINE', 'REVOKED', 'REQUEUED',
        'RESIZING', 'SUSPENDED', 'COMPLETING', 'REQUEUE_HOLD', 'REQUEUE_FED', 'SPECIAL_EXIT',
        'STOPPED', 'SIGNALING', 'STAGE_OUT', 'CONFIGURING', 'LAUNCH_FAILED', 'UPDATE_DB',
        'RESV_DEL_HOLD', 'POWER_UP_NODE', 'RECONFIG_FAIL'], upper(w));
-- A node list: what sacct prints for a job that never got nodes is none, and so is what
-- jobcomp/filetxt writes for it ('(null)', C's printf of a NULL string).
CREATE OR REPLACE TEMP MACRO ing_node_list(x) AS
    CASE WHEN x = 'None assigned' OR x = '(null)' THEN NULL ELSE nullif(x, '') END;
-- What is plausible (docs/ingest.md, "Plausible values"): a value outside these bounds is a
-- misprint, a cut line or an unset sentinel read as a value, and storing it would skew every
-- sum and percentile, so the parser rejects the record naming the field.
-- Times: from 2000-01-01 to a day after now (UTC; a day of slack for clock skew and zones).
CREATE OR REPLACE TEMP MACRO ing_ts_odd(ts) AS
    ts < TIMESTAMP '2000-01-01' OR ts > CAST(timezone('UTC', now()) AS TIMESTAMP) + INTERVAL 1 DAY;
-- Durations (elapsed, time limit): at most 10,000 days in seconds, the span of that window.
CREATE OR REPLACE TEMP MACRO ing_max_s() AS 864000000;
-- The most GPUs and CPUs one allocation can plausibly hold (the largest machines have about
-- 10^5 GPUs and 10^7 cores): beyond, a value is a typo or a forgery, never a job.
CREATE OR REPLACE TEMP MACRO ing_max_gpus() AS 1048576;
CREATE OR REPLACE TEMP MACRO ing_max_cpus() AS 16777216;
-- A TRES billing value (a weighted sum of what the job held): past 2^40 no weights give it.
CREATE OR REPLACE TEMP MACRO ing_max_billing() AS 1099511627776;
-- A user id: uid_t is 32 bits and 4294967295 is (uid_t) -1, "no user".
CREATE OR REPLACE TEMP MACRO ing_max_uid() AS 4294967294;
-- The most CPU seconds a job can have used: its CPUs for its Elapsed, half again for
-- accounting's own slack, plus a minute; with no Elapsed or CPUs known, every CPU for the
-- longest plausible time.
CREATE OR REPLACE TEMP MACRO ing_cpu_most(elapsed_s, cpus) AS
    CASE WHEN elapsed_s IS NOT NULL AND cpus > 0 THEN 1.5 * (CAST(elapsed_s AS DOUBLE) + 60) * cpus
         ELSE CAST(ing_max_s() AS DOUBLE) * ing_max_cpus() END;
-- A TimelimitRaw in minutes -> seconds, NULL beyond the bound (the product would overflow).
CREATE OR REPLACE TEMP MACRO ing_minutes_s(x) AS
    CASE WHEN ing_uint(x) <= 14400000 THEN ing_uint(x) * 60 END;
-- Memory in MB (requested, allocated): finite and at most 2^40 MB (one EiB).
CREATE OR REPLACE TEMP MACRO ing_mem_odd(mb) AS
    CASE WHEN mb IS NULL THEN FALSE ELSE NOT isfinite(mb) OR mb < 0 OR mb > 1099511627776 END;

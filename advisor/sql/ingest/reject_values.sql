-- Allocation lines whose fields could not be parsed or are implausible (strict.sql's bounds),
-- as (line_no, field, reason, raw_text, kept): kept is TRUE for a usage fault, whose job is
-- stored all the same.
SELECT line_no, bad_field AS field,
    CASE WHEN bad_field IN ('User', 'Account', 'Partition', 'Group', 'QOS', 'Cluster',
                            'AllocGRES', 'SubmitLine')
              OR (bad_field IN ('AllocTRES', 'ReqTRES')
                  AND contains(CASE bad_field WHEN 'AllocTRES' THEN alloc_tres ELSE req_tres END, chr(0)))
         THEN 'holds a NUL byte (a binary or cut line)' ELSE
    CASE bad_field
        WHEN 'JobID' THEN 'not a job id (123, 123_4, 123+1, 123.batch)'
        WHEN 'JobIDRaw' THEN 'not a raw job id (plain digits: no sign, separator, hex or exponent)'
        WHEN 'State' THEN 'not a Slurm state (COMPLETED, CANCELLED by 123, ...)'
        WHEN 'AllocTRES' THEN 'not a TRES list of key=number (cpu=4,gres/gpu=2,mem=16G): counts are whole and not negative, no key twice, no empty GPU type, at most 2^20 GPUs and 2^24 CPUs, memory and billing at most 2^40 (MB)'
        WHEN 'ReqTRES' THEN 'not a TRES list of key=number (cpu=4,gres/gpu=2,mem=16G): counts are whole and not negative, no key twice, no empty GPU type, at most 2^20 GPUs and 2^24 CPUs, memory and billing at most 2^40 (MB)'
        WHEN 'Elapsed' THEN 'not a duration [D-][HH:]MM:SS up to 10,000 days'
        WHEN 'Timelimit' THEN 'not a duration [D-][HH:]MM:SS up to 10,000 days, or UNLIMITED'
        WHEN 'Submit' THEN CASE WHEN submit <> TIMESTAMP '1970-01-01 00:00:00' THEN 'outside the plausible time window (2000-01-01 to a day after now)' ELSE 'not a known time (YYYY-MM-DDTHH:MM:SS or epoch seconds): a job submitted at Unknown, None or 0 has no month to be counted in' END
        WHEN 'Eligible' THEN CASE WHEN eligible IS NOT NULL THEN 'outside the plausible time window (2000-01-01 to a day after now)' ELSE 'not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown, None)' END
        WHEN 'Start' THEN CASE WHEN "start" IS NOT NULL THEN 'outside the plausible time window (2000-01-01 to a day after now)' ELSE 'not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown, None)' END
        WHEN 'End' THEN CASE WHEN "end" < "start" THEN 'before Start'
                             WHEN "end" IS NOT NULL THEN 'outside the plausible time window (2000-01-01 to a day after now)'
                             ELSE 'not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown, None)' END
        WHEN 'ReqMem' THEN 'not a memory size (8G, 4000Mc, 16Gn) of at most 2^40 MB'
        WHEN 'ElapsedRaw' THEN 'not a whole number of seconds up to 10,000 days'
        WHEN 'TimelimitRaw' THEN 'not a whole number of minutes up to 10,000 days, or UNLIMITED'
        WHEN 'JobName' THEN 'holds a NUL byte (a binary or cut line)'
        WHEN 'NNodes' THEN 'not a whole number of nodes up to 2^24'
        WHEN 'NCPUS' THEN 'not a whole number of CPUs up to 2^24'
        WHEN 'AllocCPUS' THEN 'not a whole number of CPUs up to 2^24'
        WHEN 'UID' THEN 'not a user id (a whole number of 0 to 4294967294)'
        ELSE 'not a whole number in range'
    END END AS reason,
    raw_text, FALSE AS kept
FROM parsed
WHERE bad_field IS NOT NULL
UNION ALL
-- Usage faults (parse.sql: usage_fault): the job is stored with that value NULL; the reject row
-- keeps the fault visible, `kept` says it cost no job.
SELECT line_no, usage_fault AS field,
    CASE WHEN usage_why IS NOT NULL THEN 'not a plausible usage: ' || usage_why
         WHEN usage_fault = 'TotalCPU' THEN 'not a CPU time [D-][HH:]MM:SS[.mmm]'
         WHEN usage_fault = 'CPUTimeRAW' THEN 'not a whole number of CPU seconds'
         WHEN usage_fault = 'TRESUsageInTot' THEN 'gres/gpuutil is not a number (percent)'
         WHEN usage_fault = 'ExitCode' THEN 'not an exit code RC:SIGNAL (0:0, 1:0, 0:9)'
    END || CASE WHEN usage_fault = 'ExitCode' THEN ' (the job is stored with its exit code NULL)'
                ELSE ' (the job is stored with this usage NULL)' END AS reason,
    raw_text, TRUE AS kept
FROM parsed
WHERE usage_fault IS NOT NULL AND bad_field IS NULL

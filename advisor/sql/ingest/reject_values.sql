-- Allocation lines whose fields could not be parsed, as (line_no, field, reason, raw_text).
SELECT line_no, bad_field AS field,
    CASE bad_field
        WHEN 'JobID' THEN 'not a job id (123, 123_4, 123+1, 123.batch)'
        WHEN 'JobIDRaw' THEN 'not a raw job id (plain digits: no sign, separator, hex or exponent)'
        WHEN 'State' THEN 'not a Slurm state (COMPLETED, CANCELLED by 123, ...)'
        WHEN 'AllocTRES' THEN 'not a TRES list of key=number (cpu=4,gres/gpu=2,mem=16G): counts are whole and not negative, no key twice, no empty GPU type'
        WHEN 'ReqTRES' THEN 'not a TRES list of key=number (cpu=4,gres/gpu=2,mem=16G): counts are whole and not negative, no key twice, no empty GPU type'
        WHEN 'Elapsed' THEN 'not a duration [D-][HH:]MM:SS'
        WHEN 'Timelimit' THEN 'not a duration [D-][HH:]MM:SS or UNLIMITED'
        WHEN 'Submit' THEN 'not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown, None)'
        WHEN 'Eligible' THEN 'not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown, None)'
        WHEN 'Start' THEN 'not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown, None)'
        WHEN 'End' THEN CASE WHEN "end" < "start" THEN 'before Start'
                             ELSE 'not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown, None)' END
        WHEN 'TotalCPU' THEN 'not a CPU time [D-][HH:]MM:SS[.mmm]'
        WHEN 'TRESUsageInTot' THEN 'gres/gpuutil is not a number (percent)'
        ELSE 'not a whole number in range'
    END AS reason,
    raw_text
FROM parsed
WHERE bad_field IS NOT NULL

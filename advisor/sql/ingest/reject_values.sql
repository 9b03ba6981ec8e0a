-- Allocation lines whose fields could not be parsed, as (line_no, field, reason, raw_text).
SELECT line_no, bad_field AS field,
    CASE bad_field
        WHEN 'JobID' THEN 'not a job id (123, 123_4, 123+1, 123.batch)'
        WHEN 'JobIDRaw' THEN 'no numeric raw job id (array tasks need JobIDRaw in --format)'
        WHEN 'State' THEN 'not a Slurm state (COMPLETED, CANCELLED by 123, ...)'
        WHEN 'AllocTRES' THEN 'not a TRES list of key=number (cpu=4,gres/gpu=2,mem=16G)'
        WHEN 'ReqTRES' THEN 'not a TRES list of key=number (cpu=4,gres/gpu=2,mem=16G)'
        WHEN 'Elapsed' THEN 'not a duration [D-][HH:]MM:SS'
        WHEN 'Timelimit' THEN 'not a duration [D-][HH:]MM:SS or UNLIMITED'
        WHEN 'Submit' THEN 'not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown, None)'
        WHEN 'Eligible' THEN 'not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown, None)'
        WHEN 'Start' THEN 'not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown, None)'
        WHEN 'End' THEN 'not a time (YYYY-MM-DDTHH:MM:SS, epoch seconds, Unknown, None)'
        ELSE 'not a whole number in range'
    END AS reason,
    raw_text
FROM parsed
WHERE bad_field IS NOT NULL

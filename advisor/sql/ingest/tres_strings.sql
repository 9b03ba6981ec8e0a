-- Parser input holding only the distinct TRES strings ($typed) and AllocGRES strings ($gres)
-- of prescan.sql; <nulls>: every other canonical field, NULL.
SELECT CAST(NULL AS BIGINT) AS line_no, FALSE AS repaired, '0' AS jobid,
    t AS alloctres, g AS allocgres, {{nulls}}
FROM (SELECT unnest($typed) AS t, CAST(NULL AS VARCHAR) AS g
      UNION ALL SELECT NULL, unnest($gres))

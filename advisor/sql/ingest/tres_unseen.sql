-- How likely a record's TRES string is missing from ing_tres_lookup (tres_lookup.sql), as
-- Good-Turing estimates it from the groups the lookup was filled from: the strings they held
-- once, over all the strings they held; 1 when the lookup was cut at $max strings.
SELECT CASE WHEN count(*) >= $max THEN 1.0
            ELSE count(*) FILTER (WHERE n = 1) / greatest(sum(n), 1) END
FROM ing_tres_lookup

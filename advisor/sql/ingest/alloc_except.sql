-- Allocation lines of `parsed` but the few that lose to another line of their key (losers.sql;
-- the caller substitutes the losers placeholder with their rowids, a literal list of integers).
    SELECT * FROM parsed
    WHERE step IS NULL AND bad_field IS NULL AND NOT list_contains({{losers}}, rowid)

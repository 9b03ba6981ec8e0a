-- The lines of `parsed` but the few that lose to another line of their key (<losers>: their
-- rowids from losers.sql, a literal list of our own integers: no join at all).
SELECT * FROM parsed WHERE NOT list_contains({{losers}}, rowid)

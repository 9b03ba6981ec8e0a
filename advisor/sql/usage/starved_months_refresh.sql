-- usage/starved_months_refresh: fill usage_starved_months with usage/starved_mix.sql's rows by
-- month ({{rows}}: that statement over usage/facts.sql, bound with no filter and the default
-- thresholds), beside usage/months_refresh.sql in the cube rebuild's transaction.
INSERT INTO usage_starved_months BY NAME
{{rows}}

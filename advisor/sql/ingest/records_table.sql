-- Temp <table>: the rows of the registered Arrow table ing_records that pass <where>.
CREATE OR REPLACE TEMP TABLE {{table}} AS SELECT * FROM ing_records {{where}}

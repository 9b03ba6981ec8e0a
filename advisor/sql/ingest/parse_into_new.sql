-- Temp <table>: the parser's rows (<parse>: parse.sql over a source) that meet <where>.
CREATE OR REPLACE TEMP TABLE {{table}} AS
SELECT * FROM ({{parse}}) AS p WHERE {{where}}

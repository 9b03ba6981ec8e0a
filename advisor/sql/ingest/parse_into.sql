-- The parser's rows (<parse>: parse.sql over a source) that meet <where>, added to <table>.
INSERT INTO {{table}}
SELECT * FROM ({{parse}}) AS p WHERE {{where}}

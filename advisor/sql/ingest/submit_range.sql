-- A file's first and last submit texts as times (macros.sql: ing_ts in the source zone $tz).
SELECT ing_ts($first, $tz), ing_ts($last, $tz)

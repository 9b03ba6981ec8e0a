-- ratios/cube_slices_now: the slices of jobs as they are now (TEMP _slices_now): per cluster and
-- month (of the start, or of the submit for a job never started: the month every derived table
-- files a job under) the job count and the sum of the rows' hashes. Any insert, update or delete
-- of a job, through any writer, changes its slice's count or sum (bar a 64-bit collision).
-- The hash takes every column of jobs as its arguments (unpacked COLUMNS): cheaper than the
-- hash of the row as one struct.
CREATE OR REPLACE TEMP TABLE _slices_now AS
SELECT j.cluster,
       CAST(date_trunc('month', coalesce(j.start, j.submit)) AS DATE) AS month,
       count(*) AS jobs,
       sum(hash(*COLUMNS(*))) AS checksum
FROM jobs AS j
GROUP BY ALL

-- recommend/job_partitions: every partition the loaded jobs ran in.
SELECT DISTINCT "partition" FROM jobs WHERE "partition" IS NOT NULL ORDER BY 1

-- ratios/cube_people_months_refresh: build ratio_cube_people_months from jobs and the current
-- ratio_people (inside a transaction, after emptying it): per (pid, month, state, interactive,
-- GPUs, CPUs, exclusion reason) the job count and GPU-seconds, stored in month order so that a
-- time range reads only its row groups. Built on the first query that needs it
-- (advisor.ratios.refresh_people_months), not in every rebuild: it is by far the largest cube.
-- Jobs are numbered (joined to ratio_people) before grouping, which is cheaper than grouping
-- by the five names as well (figures: docs/ratios.md). {{same_person}}: ratios/same_person of j.
INSERT INTO ratio_cube_people_months
SELECT p.pid, j.month, j.state, j.interactive, j.gpus, j.cpus, j.excluded_reason,
       count(*), coalesce(sum(j.gpu_seconds), 0)
FROM (
{{jobs}}
) AS j
JOIN ratio_people AS p
  ON {{same_person}}
GROUP BY ALL
ORDER BY j.month, j.state, p.pid

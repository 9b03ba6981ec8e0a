-- ratios/cube_people_next: ratio_cube_people as it will be after a slice rebuild, without reading
-- every job (TEMP _people_next): its rows, plus the people rows of _ratio_fine (the changed
-- slices' jobs now; {{rows}}: ratios/cube_people_fine_rows), minus what those slices held
-- before, read from ratio_cube_people_months (fresh, built from the same jobs as the other
-- cubes). Keys whose jobs sum to 0 are gone.
-- Only while every person of _ratio_fine has a pid (ratios/cube_people_changes says).
CREATE OR REPLACE TEMP TABLE _people_next AS
WITH now_in AS (
{{rows}}
), was_in AS (
    SELECT m.pid, m.gpus, m.cpus, m.excluded_reason,
           -sum(m.jobs) AS jobs, -sum(m.gpu_seconds) AS gpu_seconds
    FROM ratio_cube_people_months AS m
    JOIN ratio_people AS p ON p.pid = m.pid
    SEMI JOIN _slices_changed AS c
      ON c.cluster IS NOT DISTINCT FROM p.cluster AND c.month IS NOT DISTINCT FROM m.month
    GROUP BY ALL
)
SELECT pid, gpus, cpus, excluded_reason, sum(jobs) AS jobs, sum(gpu_seconds) AS gpu_seconds
FROM (
    SELECT pid, gpus, cpus, excluded_reason, jobs, gpu_seconds FROM ratio_cube_people
    UNION ALL SELECT * FROM now_in
    UNION ALL SELECT * FROM was_in
)
GROUP BY ALL
HAVING sum(jobs) <> 0

-- pressure/any_records: whether any cgroup pressure record was loaded at all (a database
-- without them has no measured job, whatever the filters).
SELECT EXISTS (SELECT 1 FROM pressure_records)

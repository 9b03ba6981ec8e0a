-- The schema of a fresh advisor database (generated: python -m advisor.schema > docs/schema.sql).
-- Base data comes from advisor/sql/migrations/, derived tables from advisor/sql/ratios/cube/.

CREATE TABLE bench_requests(run_id VARCHAR, request_no INTEGER, kind VARCHAR NOT NULL, prompt_tokens INTEGER, output_tokens INTEGER, sent_s DOUBLE, first_token_s DOUBLE, finished_s DOUBLE, ttft_ms DOUBLE, e2e_ms DOUBLE, status VARCHAR NOT NULL, "error" VARCHAR, PRIMARY KEY(run_id, request_no));

CREATE TABLE bench_runs(run_id VARCHAR PRIMARY KEY, started_at TIMESTAMP, finished_at TIMESTAMP, status VARCHAR NOT NULL, engine VARCHAR NOT NULL, engine_version VARCHAR, model VARCHAR, model_params_b DOUBLE, platform VARCHAR, gpu_name VARCHAR, cpu_model VARCHAR, gpus INTEGER, tp INTEGER, cores INTEGER, cores_per_gpu DOUBLE, core_list VARCHAR, workload VARCHAR, attacker_rps DOUBLE, attacker_tokens_min INTEGER, attacker_tokens_max INTEGER, victim_rps DOUBLE, duration_s DOUBLE, repeat INTEGER, timeout_s DOUBLE, victim_ttft_p50_ms DOUBLE, victim_ttft_p90_ms DOUBLE, attacker_ttft_p50_ms DOUBLE, requests_ok INTEGER, requests_failed INTEGER, requests_timed_out INTEGER, engine_cpu_percent DOUBLE, gpu_util_percent DOUBLE, tokenize_share DOUBLE, env JSON, metrics_before JSON, metrics_after JSON, extra JSON, source_file VARCHAR, "cluster" VARCHAR, "partition" VARCHAR);

CREATE TABLE calibration(point_id VARCHAR PRIMARY KEY, "source" VARCHAR NOT NULL, source_ref VARCHAR, platform VARCHAR, engine VARCHAR, engine_version VARCHAR, model VARCHAR, model_params_b DOUBLE, gpus INTEGER, workload VARCHAR, load_rps DOUBLE, prompt_tokens INTEGER, cores INTEGER, cores_per_gpu DOUBLE, metric VARCHAR NOT NULL, "value" DOUBLE, unit VARCHAR, measured_on DATE, notes VARCHAR);

CREATE TABLE derived_slices("cluster" VARCHAR, "month" DATE, jobs BIGINT NOT NULL, checksum HUGEINT NOT NULL);

CREATE SEQUENCE ingest_id_seq INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START 1 NO CYCLE;

CREATE TABLE ingest_windows(clusters VARCHAR, window_start TIMESTAMP, window_end TIMESTAMP, ingest_id BIGINT, finished_at TIMESTAMP NOT NULL, PRIMARY KEY(clusters, window_start, window_end));

CREATE TABLE ingests(ingest_id BIGINT DEFAULT(nextval('ingest_id_seq')) PRIMARY KEY, "source" VARCHAR NOT NULL, format VARCHAR NOT NULL, "compression" VARCHAR, content_hash VARCHAR, "cluster" VARCHAR, source_tz VARCHAR DEFAULT('UTC') NOT NULL, started_at TIMESTAMP NOT NULL, finished_at TIMESTAMP, rows_read BIGINT DEFAULT(0) NOT NULL, lines_read BIGINT DEFAULT(0) NOT NULL, inserted BIGINT DEFAULT(0) NOT NULL, updated BIGINT DEFAULT(0) NOT NULL, unchanged BIGINT DEFAULT(0) NOT NULL, rejected BIGINT DEFAULT(0) NOT NULL, missing_fields VARCHAR[], disabled_analyses VARCHAR[], status VARCHAR DEFAULT('running') NOT NULL);

CREATE TABLE job_mix_months("cluster" VARCHAR, "partition" VARCHAR, gpu_type VARCHAR, cpus INTEGER, gpus INTEGER, "month" DATE, gres_type VARCHAR, jobs BIGINT NOT NULL, elapsed_s HUGEINT NOT NULL, gpu_seconds HUGEINT NOT NULL, first_start TIMESTAMP, last_end TIMESTAMP);

CREATE TABLE jobs("cluster" VARCHAR NOT NULL, job_id_raw BIGINT NOT NULL, submit TIMESTAMP NOT NULL, job_id VARCHAR NOT NULL, array_job_id BIGINT, array_task_id BIGINT, het_job_id BIGINT, het_job_offset INTEGER, "user" VARCHAR, uid BIGINT, "group" VARCHAR, account VARCHAR, "partition" VARCHAR, qos VARCHAR, job_name VARCHAR, state VARCHAR, state_raw VARCHAR, exit_code VARCHAR, eligible TIMESTAMP, "start" TIMESTAMP, "end" TIMESTAMP, elapsed_s BIGINT, timelimit_s BIGINT, nnodes INTEGER, cpus INTEGER, gpus INTEGER DEFAULT(0) NOT NULL, gpu_type VARCHAR, gpu_type_raw VARCHAR, gpu_types VARCHAR, mem_mb BIGINT, billing DOUBLE, node_list VARCHAR, req_cpus INTEGER, req_gpus INTEGER, req_mem_mb BIGINT, alloc_tres VARCHAR, req_tres VARCHAR, submit_line VARCHAR, work_dir VARCHAR, is_interactive BOOLEAN, interactive_evidence VARCHAR, "exclusive" BOOLEAN, ingest_id BIGINT, updated_at TIMESTAMP, cpu_used_s DOUBLE, cpu_time_alloc_s BIGINT, mem_used_max_mb DOUBLE, gpu_util_mean_pct DOUBLE, gpu_util_max_pct DOUBLE, gpu_mem_max_mb DOUBLE, usage_source VARCHAR, psi_some_s DOUBLE, psi_full_s DOUBLE, psi_covered_s DOUBLE, psi_hosts INTEGER, psi_status VARCHAR);

CREATE TABLE nodes("cluster" VARCHAR, node_name VARCHAR, cpus INTEGER, sockets INTEGER, cores_per_socket INTEGER, threads_per_core INTEGER, real_memory_mb BIGINT, gpus INTEGER DEFAULT(0) NOT NULL, gpu_type VARCHAR, gpu_type_raw VARCHAR, gres VARCHAR, partitions VARCHAR[], features VARCHAR, state VARCHAR, snapshot_at TIMESTAMP NOT NULL, ingest_id BIGINT, cpus_effective INTEGER, PRIMARY KEY("cluster", node_name));

CREATE TABLE pressure_records("cluster" VARCHAR, job_id VARCHAR, step VARCHAR, host VARCHAR, collected_at TIMESTAMP, status VARCHAR NOT NULL, some_s DOUBLE, full_s DOUBLE, usage_s DOUBLE, throttled_s DOUBLE, nr_throttled BIGINT, cpus VARCHAR, cpu_count INTEGER, ingest_id BIGINT, PRIMARY KEY("cluster", job_id, step, host, collected_at));

CREATE TABLE ratio_cube("cluster" VARCHAR, gpu_type VARCHAR, "partition" VARCHAR, "month" DATE, state VARCHAR, gpus INTEGER, cpus INTEGER, interactive VARCHAR, excluded_reason VARCHAR, jobs BIGINT NOT NULL, gpu_seconds HUGEINT NOT NULL);

CREATE TABLE ratio_cube_people(pid INTEGER NOT NULL, gpus INTEGER, cpus INTEGER, excluded_reason VARCHAR, jobs BIGINT NOT NULL, gpu_seconds BIGINT NOT NULL);

CREATE TABLE ratio_cube_people_month_ratios(pid INTEGER NOT NULL, "month" DATE, cores_per_gpu DOUBLE, excluded_reason VARCHAR, jobs BIGINT NOT NULL, gpu_seconds BIGINT NOT NULL);

CREATE TABLE ratio_cube_people_months(pid INTEGER NOT NULL, "month" DATE, state VARCHAR, interactive VARCHAR, gpus INTEGER, cpus INTEGER, excluded_reason VARCHAR, jobs BIGINT NOT NULL, gpu_seconds BIGINT NOT NULL);

CREATE TABLE ratio_cube_people_months_state(jobs_rows BIGINT NOT NULL, ingest_id BIGINT NOT NULL, finished_at TIMESTAMP, rules_version INTEGER, built_at TIMESTAMP NOT NULL);

CREATE TABLE ratio_cube_schema(rules_version INTEGER NOT NULL);

CREATE TABLE ratio_cube_state(jobs_rows BIGINT NOT NULL, ingest_id BIGINT NOT NULL, finished_at TIMESTAMP, rules_version INTEGER, built_at TIMESTAMP NOT NULL);

CREATE VIEW ratio_fair_share AS SELECT "cluster", COALESCE(gpu_type, '(untyped)') AS gpu_type, min((CAST(COALESCE(cpus_effective, cpus) AS "DOUBLE") / gpus)) AS fair_share_cores_per_gpu FROM nodes WHERE ((gpus > 0) AND (COALESCE(cpus_effective, cpus) > 0)) GROUP BY ALL;

CREATE TABLE ratio_people(pid INTEGER NOT NULL, "cluster" VARCHAR, gpu_type VARCHAR, "partition" VARCHAR, account VARCHAR, "user" VARCHAR, cluster_id INTEGER, gpu_type_id INTEGER, partition_id INTEGER, account_id INTEGER, user_id INTEGER);

CREATE TABLE rejects(ingest_id BIGINT NOT NULL, "source" VARCHAR NOT NULL, line_no BIGINT, field VARCHAR, raw VARCHAR, reason VARCHAR NOT NULL);

CREATE TABLE schema_version("version" INTEGER PRIMARY KEY, "name" VARCHAR NOT NULL, applied_at TIMESTAMP DEFAULT(main.timezone('UTC', now())) NOT NULL);

CREATE MACRO usage_cpu_efficiency(cpu_used_s, elapsed_s, cpus, cpu_time_alloc_s) AS (cpu_used_s / "nullif"(CASE  WHEN (((elapsed_s > 0) AND (cpus > 0))) THEN ((elapsed_s * cpus)) ELSE cpu_time_alloc_s END, 0));

CREATE TABLE usage_months("cluster" VARCHAR, "partition" VARCHAR, gpu_type VARCHAR, "month" DATE, gpu_count INTEGER, cores_per_gpu_bin INTEGER, jobs BIGINT NOT NULL, gpu_hours DOUBLE, sum_cores_per_gpu DOUBLE, jobs_with_usage BIGINT NOT NULL, gpu_hours_cpu DOUBLE, gpu_hours_gpu DOUBLE, cpu_used_s DOUBLE, core_s DOUBLE, gpu_s DOUBLE, util_gpu_hours DOUBLE, gpu_util_peak_pct DOUBLE, starved_jobs BIGINT NOT NULL, starved_gpu_hours DOUBLE, verdict_gpu_hours DOUBLE, over_jobs BIGINT NOT NULL, over_gpu_hours DOUBLE, idle_core_hours DOUBLE, cpu_eff_counts MAP(DOUBLE, UBIGINT));

CREATE TABLE usage_people_months("cluster" VARCHAR, "partition" VARCHAR, gpu_type VARCHAR, "month" DATE, account VARCHAR, "user" VARCHAR, jobs BIGINT, gpu_hours DOUBLE, sum_cores_per_gpu DOUBLE, jobs_with_usage BIGINT, gpu_hours_cpu DOUBLE, gpu_hours_gpu DOUBLE, cpu_used_s DOUBLE, core_s DOUBLE, gpu_s DOUBLE, util_gpu_hours DOUBLE, gpu_util_peak_pct DOUBLE, starved_jobs BIGINT, starved_gpu_hours DOUBLE, verdict_gpu_hours DOUBLE, over_jobs BIGINT, over_gpu_hours DOUBLE, idle_core_hours DOUBLE);

CREATE TABLE usage_starved_months("cluster" VARCHAR, "partition" VARCHAR, gpu_type VARCHAR, "month" DATE, cpus INTEGER, gpus INTEGER, jobs BIGINT NOT NULL, gpu_hours DOUBLE, elapsed_s BIGINT);

-- The usage columns of an allocation line (SynthConfig.usage), after a comma: CPU seconds =
-- elapsed x CPUs x efficiency, as sacct's TotalCPU text; GPU utilisation summed over the
-- job's GPUs in the total.
,
      CASE WHEN pending THEN '' ELSE
        CASE WHEN cpu_s >= 86400 THEN CAST(floor(cpu_s / 86400) AS BIGINT) || '-' ELSE '' END
        || lpad(CAST(CAST(floor(cpu_s / 3600) AS BIGINT) % 24 AS VARCHAR), 2, '0') || ':'
        || lpad(CAST(CAST(floor(cpu_s / 60) AS BIGINT) % 60 AS VARCHAR), 2, '0') || ':'
        || lpad(CAST(CAST(floor(cpu_s) AS BIGINT) % 60 AS VARCHAR), 2, '0') || '.'
        || lpad(CAST(CAST(floor(cpu_s * 1000) AS BIGINT) % 1000 AS VARCHAR), 3, '0') END,
      CASE WHEN pending THEN '' ELSE CAST(el * cpus AS VARCHAR) END,
      CASE WHEN pending THEN '' ELSE 'cpu=' || elapsed_txt || ',energy=0,fs/disk=' || (raw % 9973) * 4096
        || CASE WHEN kind >= 0 THEN ',gres/gpumem=' || gmem || 'M,gres/gpuutil=' || CAST(round(util * gpus) AS BIGINT)
                ELSE '' END
        || ',mem=' || mem_used || 'M,pages=0,vmem=' || mem_used * 2 || 'M' END,
      CASE WHEN pending THEN '' ELSE 'cpu=' || elapsed_txt || ',energy=0,fs/disk=' || (raw % 9973) * 4096
        || CASE WHEN kind >= 0 THEN ',gres/gpumem=' || gmem || 'M,gres/gpuutil=' || CAST(least(100, round(util * 1.1)) AS BIGINT)
                ELSE '' END
        || ',mem=' || mem_used || 'M,pages=0,vmem=' || mem_used * 2 || 'M' END

-- The lines of a synthetic sacct -P file (advisor.synth.generate): one allocation line per
-- row of the registered Arrow table `alloc` (its GPU kind from `kinds`), then its step lines
-- (`steps`), in job order. <usage>: the usage columns after NodeList (usage_columns.sql), or
-- nothing; <step_usage>: a step line's (step_usage_columns.sql), or nothing.
WITH a AS (
  SELECT *,
    CASE WHEN base < 0 THEN CAST(raw AS VARCHAR)
         WHEN het THEN base || '+' || pos
         ELSE base || '_' || pos END AS jobid,
    ['teaching','research'][cluster + 1] AS cname,
    CASE WHEN kind >= 0 THEN kinds.partition
         ELSE ['cpu','cpu-long'][cluster + 1] END AS part,
    'u' || lpad(CAST(user AS VARCHAR), 4, '0') AS uname,
    CASE WHEN cluster = 0 THEN 'course-' || (user % 40) ELSE 'lab-' || (user % 25) END AS acct,
    submit + 1 + wait AS start_s,
    CASE WHEN kind >= 0 THEN kinds.prefix ELSE ['tcpu','rcpu'][cluster + 1] END AS nprefix,
    (raw * 7919) % 97 AS nodeno
  FROM alloc LEFT JOIN kinds ON alloc.kind = kinds.k
), b AS (
  SELECT *,
    CASE WHEN pending THEN 'CANCELLED by ' || canceller
         WHEN state = 2 THEN 'CANCELLED by ' || canceller
         ELSE ['COMPLETED','FAILED','CANCELLED','TIMEOUT','RUNNING','OUT_OF_MEMORY','NODE_FAIL'][state + 1]
    END AS state_txt,
    CASE WHEN pending THEN 'None assigned'
         WHEN nnodes = 1 THEN nprefix || '-' || lpad(CAST(nodeno AS VARCHAR), 2, '0')
         ELSE nprefix || '-[' || lpad(CAST(nodeno AS VARCHAR), 2, '0') || '-'
              || lpad(CAST(nodeno + nnodes - 1 AS VARCHAR), 2, '0') || ']' END AS nodes_txt,
    strftime(epoch_ms(submit * 1000), '%Y-%m-%dT%H:%M:%S') AS submit_txt,
    strftime(epoch_ms((submit + 1) * 1000), '%Y-%m-%dT%H:%M:%S') AS elig_txt,
    CASE WHEN pending THEN 'Unknown'
         ELSE strftime(epoch_ms(start_s * 1000), '%Y-%m-%dT%H:%M:%S') END AS start_txt,
    CASE WHEN pending THEN strftime(epoch_ms((submit + wait) * 1000), '%Y-%m-%dT%H:%M:%S')
         WHEN state = 4 THEN 'Unknown'
         ELSE strftime(epoch_ms((start_s + elapsed) * 1000), '%Y-%m-%dT%H:%M:%S') END AS end_txt,
    CASE WHEN pending THEN 0 ELSE elapsed END AS el
  FROM a
), c AS (
  SELECT *,
    CASE WHEN el >= 86400 THEN (el // 86400) || '-' ELSE '' END
      || lpad(CAST((el % 86400) // 3600 AS VARCHAR), 2, '0') || ':'
      || lpad(CAST((el % 3600) // 60 AS VARCHAR), 2, '0') || ':'
      || lpad(CAST(el % 60 AS VARCHAR), 2, '0') AS elapsed_txt,
    CASE WHEN timelimit >= 86400 THEN (timelimit // 86400) || '-' ELSE '' END
      || lpad(CAST((timelimit % 86400) // 3600 AS VARCHAR), 2, '0') || ':00:00' AS tl_txt,
    CASE WHEN kind >= 0 AND NOT pending
         THEN 'billing=' || cpus || ',cpu=' || cpus || ',gres/gpu:' || gres || '=' || gpus
              || ',gres/gpu=' || gpus || ',mem=' || mem_gb || 'G,node=' || nnodes
         WHEN NOT pending
         THEN 'billing=' || cpus || ',cpu=' || cpus || ',mem=' || mem_gb || 'G,node=' || nnodes
         ELSE '' END AS alloc_tres,
    'billing=' || req_cpus || ',cpu=' || req_cpus
      || CASE WHEN kind >= 0 THEN ',gres/gpu=' || gpus_req ELSE '' END
      || ',mem=' || mem_gb || 'G,node=' || nnodes AS req_tres,
    CASE WHEN interactive THEN ['interactive','bash','sh','interactive'][name_id % 4 + 1]
         ELSE ['train','eval','vllm-serve','prep','finetune','bench','sweep','infer',
               'tokenize','notebook','llama-8b','qwen-14b'][name_id + 1] END AS name_txt,
    '/home/' || 'u' || lpad(CAST(user AS VARCHAR), 4, '0') || '/proj' || (name_id % 5) AS workdir
  FROM b
), d AS (
  SELECT *,
    CASE WHEN interactive THEN 'salloc'
           || CASE WHEN kind >= 0 THEN ' --gpus=' || gpus_req ELSE '' END
           || ' -c ' || req_cpus || ' -p ' || part
         ELSE 'sbatch'
           || CASE WHEN exclusive THEN ' --exclusive' ELSE '' END
           || CASE WHEN cpg THEN ' --cpus-per-gpu=' || (cpus // gpus) || ' --gpus=' || gpus
                   WHEN kind >= 0 THEN ' --gpus=' || gpus_req || ' -c ' || req_cpus
                   ELSE ' -c ' || req_cpus END
           || ' -p ' || part || ' run_' || name_txt || '.sh' END
      || CASE WHEN odd AND odd_kind = 0 THEN ' --wrap="python run.py | tee out.log"'
              WHEN odd AND odd_kind = 1 THEN ' --wrap="echo start' || chr(10) || 'python run.py"'
              ELSE '' END AS submit_line,
    CASE WHEN odd AND odd_kind = 2 THEN 'caf' || chr(26) || '-run' ELSE name_txt END AS name_out
  FROM c
), lines AS (
  SELECT i, 0 AS step_no,
    concat_ws('|', jobid, CAST(raw AS VARCHAR), cname, part, 'normal', acct, acct, uname,
      CAST(10000 + user AS VARCHAR), submit_txt, elig_txt, start_txt, end_txt, elapsed_txt,
      exit_code || ':0', state_txt, CAST(nnodes AS VARCHAR), CAST(cpus AS VARCHAR),
      CAST(req_cpus AS VARCHAR), mem_gb || 'G', req_tres, alloc_tres, tl_txt, nodes_txt{{usage}},
      workdir, name_out, submit_line) AS line
  FROM d
  UNION ALL
  SELECT i, s.step_no,
    concat_ws('|', jobid || '.' || s.suffix, raw || '.' || s.suffix, cname, part, '', acct,
      '', '', '', start_txt, start_txt, start_txt, end_txt, elapsed_txt,
      '0:0', CASE WHEN state = 4 THEN 'RUNNING' WHEN state = 0 THEN 'COMPLETED' ELSE 'CANCELLED' END,
      CAST(CASE WHEN s.suffix = 'batch' THEN 1 ELSE nnodes END AS VARCHAR),
      CAST(cpus AS VARCHAR), CAST(cpus AS VARCHAR), '',
      '', 'cpu=' || cpus || CASE WHEN kind >= 0 THEN ',gres/gpu:' || gres || '=' || gpus
                                 || ',gres/gpu=' || gpus ELSE '' END
          || ',mem=' || mem_gb || 'G,node=' || nnodes,
      '', nodes_txt{{step_usage}}, '', s.suffix, '') AS line
  FROM d JOIN steps s
    ON d.steps AND (
      (s.suffix = 'extern')
      OR (s.suffix = 'interactive' AND d.interactive)
      OR (s.suffix = 'batch' AND NOT d.interactive)
      OR (s.suffix = '0' AND d.has_step0))
)
SELECT line || chr(10) AS line FROM lines ORDER BY i, step_no

-- Unit tests of slurm/job_submit.lua's rule matching and decisions, run by plain lua5.1 through
-- tests/slurm/lua/harness.lua (its `slurm` stand-in records log calls); the real slurmctld runs
-- the same file in tests/slurm/test_lua_in_slurmctld.py.
-- Usage: lua5.1 tests/slurm/lua/test_job_submit.lua REPO_ROOT TMPDIR

local H = dofile(arg[1] .. "/tests/slurm/lua/harness.lua")
local M = dofile(H.root .. "/slurm/job_submit.lua")
H.before_each = M.reset_cache
local tmp, logs, test, eq, write, job = H.tmp, H.logs, H.test, H.eq, H.write, H.job

local POLICY = [[
return {
  version = 1, generated_at = "2026-11-29T22:40:00Z", source = "test",
  rules = {
    { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, default_cpus_per_gpu = 8, mode = "set-default-when-unset" },
    { partition = "gpu", gpu_type = "*", min_cpus_per_gpu = 3, default_cpus_per_gpu = 6, mode = "set-default-when-unset" },
    { partition = "*", gpu_type = "a100", min_cpus_per_gpu = 2, default_cpus_per_gpu = 5, mode = "enforce-minimum" },
    { partition = "*", gpu_type = "*", min_cpus_per_gpu = 2, default_cpus_per_gpu = 4, mode = "advise" },
  },
}
]]
local policy = assert(M.validate(assert(loadstring(POLICY))()))

test("gres strings as 22.05 passes them give the GPU count and type", function()
  local n, t = M.parse_gpu_tres("gres:gpu:h100:4")
  eq(n, 4, "count"); eq(t, "h100", "type")
  n, t = M.parse_gpu_tres("gres:gpu:2")
  eq(n, 2, "untyped count"); eq(t, nil, "untyped type")
  n, t = M.parse_gpu_tres("gres/gpu:A100:1,gres:shard:3")
  eq(n, 1, "count beside a shard"); eq(t, "a100", "type is lower-cased")
  n = M.parse_gpu_tres("gres:shard:2")
  eq(n, 0, "no gpu")
  eq(M.parse_cpus_per_gpu("gres:gpu:8"), 8, "cpus_per_tres")
  eq(M.parse_cpus_per_gpu(nil), nil, "unset cpus_per_tres")
end)

test("the most specific rule wins", function()
  eq(M.match(policy, "gpu", "h100").default_cpus_per_gpu, 8, "(gpu, h100)")
  eq(M.match(policy, "gpu", "a100").default_cpus_per_gpu, 6, "(gpu, *) beats (*, a100)")
  eq(M.match(policy, "other", "a100").default_cpus_per_gpu, 5, "(*, a100)")
  eq(M.match(policy, "other", nil).default_cpus_per_gpu, 4, "(*, *) for untyped")
  eq(M.match(policy, nil, "h100").default_cpus_per_gpu, 4, "no partition: (*, *)")
end)

test("a partition list matches its first partition; no partition matches the default one", function()
  eq(M.partition_of(job({ partition = "gpu,cpu" }), {}), "gpu", "list")
  eq(M.partition_of(job({}), { gpu = { name = "gpu", flag_default = 1 }, cpu = { name = "cpu", flag_default = 0 } }),
    "gpu", "default partition")
  eq(M.partition_of(job({}), nil), nil, "unknown default")
end)

test("a GPU job that set no CPUs gets the rule's default through cpus_per_tres", function()
  local d = M.decide(policy, job({ partition = "gpu", tres_per_node = "gres:gpu:h100:4" }), {})
  eq(d.action, "set"); eq(d.cpus_per_tres, "gres:gpu:8"); eq(d.reason, "unset")
end)

test("--gpus=2 (tres_per_job, untyped) gets the partition's wildcard rule", function()
  local d = M.decide(policy, job({ partition = "gpu", tres_per_job = "gres:gpu:2" }), {})
  eq(d.action, "set"); eq(d.cpus_per_tres, "gres:gpu:6")
end)

test("a job with its own --cpus-per-gpu is left alone in default mode", function()
  local d = M.decide(policy, job({ partition = "gpu", tres_per_node = "gres:gpu:h100:2", cpus_per_tres = "gres:gpu:12" }), {})
  eq(d.action, "none")
end)

test("a job with its own -c below the minimum is advised, not changed, in default mode", function()
  local d = M.decide(policy, job({ partition = "gpu", tres_per_node = "gres:gpu:h100:4", cpus_per_task = 4, min_cpus = 4 }), {})
  eq(d.action, "advise"); eq(d.cpus_per_tres, nil)
  assert(d.message:find("%-%-cpus%-per%-gpu=8"), d.message)
  assert(d.message:find("1 CPU cores per GPU", 1, true), d.message)
end)

test("advise mode never changes the job and names the flag when below the minimum", function()
  local d = M.decide(policy, job({ partition = "other", tres_per_job = "gres:gpu:4" }), {})
  eq(d.action, "advise"); eq(d.cpus_per_tres, nil)
  assert(d.message:find("0.25 CPU cores per GPU", 1, true), d.message)
  assert(d.message:find("--cpus-per-gpu=4", 1, true), d.message)
  d = M.decide(policy, job({ partition = "other", tres_per_job = "gres:gpu:1", cpus_per_task = 2 }), {})
  eq(d.action, "none", "at the minimum: nothing to say")
end)

test("enforce-minimum raises a low --cpus-per-gpu and rejects a low --cpus-per-task", function()
  local d = M.decide(policy, job({ partition = "other", tres_per_node = "gres:gpu:a100:2", cpus_per_tres = "gres:gpu:1" }), {})
  eq(d.action, "set"); eq(d.cpus_per_tres, "gres:gpu:2"); eq(d.reason, "raise")
  d = M.decide(policy, job({ partition = "other", tres_per_node = "gres:gpu:a100:2", cpus_per_task = 1 }), {})
  eq(d.action, "reject")
  assert(d.message:find("--cpus-per-gpu=5", 1, true), d.message)
  d = M.decide(policy, job({ partition = "other", tres_per_node = "gres:gpu:a100:2", cpus_per_task = 8 }), {})
  eq(d.action, "none", "enough cores")
end)

test("23.11+ spellings (gres/gpu:N) are read, and a value set is written the same way", function()
  -- slurm_opt.c writes "gres/gpu:%d" from 23.11 to 26.05, "gres:gpu:%d" up to 23.02
  eq(M.parse_cpus_per_gpu("gres/gpu:8"), 8, "cpus_per_tres, 23.11+")
  local n, t = M.parse_gpu_tres("gres/gpu:h100:4")
  eq(n, 4, "count"); eq(t, "h100", "type")
  local d = M.decide(policy, job({ partition = "gpu", tres_per_node = "gres/gpu:h100:4" }), {})
  eq(d.action, "set"); eq(d.cpus_per_tres, "gres/gpu:8"); eq(d.reason, "unset")
  d = M.decide(policy, job({ partition = "other", tres_per_node = "gres/gpu:a100:2", cpus_per_tres = "gres/gpu:1" }), {})
  eq(d.action, "set"); eq(d.cpus_per_tres, "gres/gpu:2"); eq(d.reason, "raise")
  d = M.decide(policy, job({ partition = "gpu", tres_per_node = "gres/gpu:h100:2", cpus_per_tres = "gres/gpu:12" }), {})
  eq(d.action, "none", "its own --cpus-per-gpu, 23.11 spelling")
  eq(M.gres_prefix(job({ tres_per_job = "gres:gpu:2" })), "gres:", "22.05 spelling kept")
  eq(M.gres_prefix(job({ tres_per_job = "gres/gpu:2" })), "gres/", "23.11 spelling kept")
end)

test("GPUs per node count on every node; per task on every task", function()
  local r = M.request(job({ tres_per_node = "gres:gpu:h100:2", min_nodes = 2, cpus_per_task = 4 }))
  eq(r.gpus, 4, "gpus"); eq(r.cpus, 8, "cpus, one task per node")
  r = M.request(job({ tres_per_task = "gres:gpu:1", num_tasks = 4 }))
  eq(r.gpus, 4, "per task"); eq(r.cpus, 4, "default one CPU per task")
end)

test("CPU-only jobs are never touched", function()
  eq(M.decide(policy, job({ partition = "gpu", cpus_per_task = 1 }), {}).action, "none")
  eq(M.decide(policy, job({ partition = "gpu", tres_per_node = "gres:shard:2" }), {}).action, "none")
end)

test("slurm_job_submit sets cpus_per_tres and tells the user", function()
  local path = tmp .. "/advisor-policy.lua"
  write(path, POLICY)
  local old = os.getenv
  os.getenv = function(k) if k == "ADVISOR_POLICY" then return path end return old(k) end
  local j = job({ partition = "gpu", tres_per_node = "gres:gpu:h100:2" })
  eq(slurm_job_submit(j, {}, 1000), 0, "rc")
  eq(j.cpus_per_tres, "gres:gpu:8")
  eq(#logs.user, 1, "one message to the user")
  os.getenv = old
end)

test("a broken, missing or wrong-version policy lets every job through, logged once", function()
  local path = tmp .. "/broken-policy.lua"
  local old = os.getenv
  os.getenv = function(k) if k == "ADVISOR_POLICY" then return path end return old(k) end
  for _, text in ipairs({ "return {", "error('boom')", "return 42", "return { version = 2, rules = {} }", false }) do
    M.reset_cache()
    for k in pairs(logs) do logs[k] = {} end
    if text then write(path, text) else os.remove(path) end
    for _ = 1, 3 do
      local j = job({ partition = "gpu", tres_per_node = "gres:gpu:h100:2" })
      eq(slurm_job_submit(j, {}, 1000), 0, "rc for " .. tostring(text))
      eq(j.cpus_per_tres, nil, "unchanged for " .. tostring(text))
    end
    eq(#logs.error, 1, "logged once for " .. tostring(text))
    eq(#logs.user, 0, "nothing for the user")
  end
  os.getenv = old
end)

test("bad rules are dropped with a reason and good ones kept", function()
  local p = assert(M.validate({ version = 1, rules = {
    { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, default_cpus_per_gpu = 8, mode = "sometimes" },
    { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, default_cpus_per_gpu = 8, mode = "advise" },
  } }))
  eq(#p.rules, 1, "rules kept"); eq(#p.dropped, 1, "rules dropped")
  assert(p.dropped[1]:find("mode sometimes", 1, true), p.dropped[1])
end)

test("the policy is re-read when it changes, not on every job", function()
  local path = tmp .. "/changing-policy.lua"
  local old = os.getenv
  os.getenv = function(k) if k == "ADVISOR_POLICY" then return path end return old(k) end
  write(path, POLICY)
  local p1 = M.policy(1000)
  eq(M.match(p1, "gpu", "h100").default_cpus_per_gpu, 8)
  write(path, (POLICY:gsub("default_cpus_per_gpu = 8", "default_cpus_per_gpu = 16")))
  eq(M.policy(1000 + M.RELOAD_S + 1) ~= nil, true, "reloaded")
  eq(M.match(M.policy(1000 + M.RELOAD_S + 2), "gpu", "h100").default_cpus_per_gpu, 16)
  os.getenv = old
end)

test("the policy that advisor policy export writes is accepted", function()
  local exported = arg[3]
  if not exported or exported == "" then print("# no exported policy given"); return end
  local p, text, err = M.read_policy(exported)
  eq(err, nil, "error"); assert(#p.rules > 0, "rules")
  eq(#p.dropped, 0, "dropped rules")
end)

H.done()

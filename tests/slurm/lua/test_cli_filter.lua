-- Unit tests of slurm/cli_filter.lua run by plain lua5.1 through tests/slurm/lua/harness.lua.
-- Usage: lua5.1 tests/slurm/lua/test_cli_filter.lua REPO_ROOT TMPDIR

local H = dofile(arg[1] .. "/tests/slurm/lua/harness.lua")
local logs, test, eq = H.logs, H.test, H.eq
local policy_path = H.tmp .. "/advisor-policy.lua"
local env = { ADVISOR_POLICY = policy_path }
local real_getenv = os.getenv
os.getenv = function(k) if env[k] ~= nil then return env[k] or nil end return real_getenv(k) end

dofile(H.root .. "/slurm/cli_filter.lua")
local F = advisor_cli_filter
H.before_each = F.lib.reset_cache

local fh = assert(io.open(policy_path, "w"))
fh:write([[return { version = 1, rules = {
  { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, default_cpus_per_gpu = 8, mode = "set-default-when-unset" },
  { partition = "*", gpu_type = "*", min_cpus_per_gpu = 2, default_cpus_per_gpu = 4, mode = "advise" },
} }]])
fh:close()

test("client options become the job_desc fields job_submit.lua reads", function()
  local j = F.as_job({ gres = "gpu:h100:4", partition = "gpu", ["cpus-per-task"] = "0", ntasks = "2" })
  eq(j.tres_per_node, "gres:gpu:h100:4"); eq(j.cpus_per_task, nil, "0 is unset"); eq(j.num_tasks, 2)
  j = F.as_job({ gpus = "a100:2", ["cpus-per-gpu"] = "6", nodes = "2-3" })
  eq(j.tres_per_job, "gres:gpu:a100:2"); eq(j.cpus_per_tres, "gres:gpu:6"); eq(j.min_nodes, 2)
  j = F.as_job({ ["gpus-per-node"] = "2" })
  eq(j.tres_per_node, "gres:gpu:2")
  -- a --gres written in 23.11+'s spelling reads the same
  j = F.as_job({ gres = "gres/gpu:h100:4" })
  eq(j.tres_per_node, "gres:gpu:h100:4", "gres/ prefix")
end)

test("a GPU job with no CPU count gets advice naming the flag, options unchanged", function()
  local o = { gres = "gpu:h100:2", partition = "gpu" }
  eq(slurm_cli_pre_submit(o, 0), 0)
  eq(#logs.info, 1, "one line of advice")
  assert(logs.info[1]:find("--cpus-per-gpu=8", 1, true), logs.info[1])
  eq(o["cpus-per-gpu"], nil, "not set without ADVISOR_CLI_SET_DEFAULTS")
end)

test("with ADVISOR_CLI_SET_DEFAULTS=1 the client sets --cpus-per-gpu itself", function()
  env.ADVISOR_CLI_SET_DEFAULTS = "1"
  local o = { gres = "gpu:h100:2", partition = "gpu" }
  eq(slurm_cli_pre_submit(o, 0), 0)
  eq(o["cpus-per-gpu"], "8")
  env.ADVISOR_CLI_SET_DEFAULTS = false
end)

test("advise rules never set options, even when asked to", function()
  env.ADVISOR_CLI_SET_DEFAULTS = "1"
  local o = { gpus = "4", partition = "debug" }
  eq(slurm_cli_pre_submit(o, 0), 0)
  eq(o["cpus-per-gpu"], nil)
  assert(logs.info[1] and logs.info[1]:find("--cpus-per-gpu=4", 1, true), tostring(logs.info[1]))
  env.ADVISOR_CLI_SET_DEFAULTS = false
end)

test("a --cpus-per-gpu below an enforced minimum is reported as raised, never as missing", function()
  local f = assert(io.open(policy_path, "w"))
  f:write([[return { version = 1, rules = {
    { partition = "*", gpu_type = "*", min_cpus_per_gpu = 3, default_cpus_per_gpu = 5, mode = "enforce-minimum" } } }]])
  f:close()
  env.ADVISOR_CLI_SET_DEFAULTS = "1"
  local o = { gpus = "2", ["cpus-per-gpu"] = "1", ["cpus-per-task"] = "0", ntasks = "1", nodes = "1-0", mincpus = "-1" }
  eq(slurm_cli_pre_submit(o, 0), 0)
  eq(o["cpus-per-gpu"], "1", "the client leaves the raise to job_submit")
  eq(#logs.info, 1)
  assert(logs.info[1]:find("raised to the minimum of 3", 1, true), logs.info[1])
  env.ADVISOR_CLI_SET_DEFAULTS = false
  f = assert(io.open(policy_path, "w"))
  f:write([[return { version = 1, rules = {
    { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, default_cpus_per_gpu = 8, mode = "set-default-when-unset" },
    { partition = "*", gpu_type = "*", min_cpus_per_gpu = 2, default_cpus_per_gpu = 4, mode = "advise" },
  } }]])
  f:close()
end)

test("enough cores, CPU-only jobs and steps inside a job print nothing", function()
  eq(slurm_cli_pre_submit({ gres = "gpu:h100:2", partition = "gpu", ["cpus-per-gpu"] = "8" }, 0), 0)
  eq(slurm_cli_pre_submit({ ntasks = "4" }, 0), 0)
  env.SLURM_JOB_ID = "12"
  eq(slurm_cli_pre_submit({ ["cpus-per-task"] = "1" }, 0), 0)
  env.SLURM_JOB_ID = false
  eq(#logs.info, 0, "no advice")
end)

test("a broken policy prints nothing on the user's terminal and changes nothing", function()
  local f = assert(io.open(policy_path, "w")); f:write("return {"); f:close()
  local o = { gres = "gpu:h100:2", partition = "gpu" }
  eq(slurm_cli_pre_submit(o, 0), 0)
  eq(#logs.info + #logs.error, 0, "silent"); eq(#logs.debug, 1, "debug only")
  eq(o["cpus-per-gpu"], nil)
end)

H.done()

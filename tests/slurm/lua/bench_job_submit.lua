-- How long slurm/job_submit.lua takes per job, in the same lua5.1 process as a baseline.
-- Usage: lua5.1 tests/slurm/lua/bench_job_submit.lua REPO_ROOT POLICY_FILE [N]
-- Prints microseconds per call for: an empty Lua function (baseline), slurm_job_submit on a GPU
-- job that gets the default set, on one that sets its own cores, and on a CPU-only job.
-- slurmctld runs the same code (Lua 5.1) under its own locks; figures here are of this machine.

local root, policy, n = arg[1], arg[2], tonumber(arg[3] or "200000")
slurm = { SUCCESS = 0, ERROR = -1, log_user = function() end, log_error = function() end,
          log_info = function() end, log_debug = function() end }
local real_getenv = os.getenv
os.getenv = function(k) if k == "ADVISOR_POLICY" then return policy end return real_getenv(k) end
dofile(root .. "/slurm/job_submit.lua")

local NO_VAL, NO_VAL16 = 4294967294, 65534
local function job(extra)
  local j = { partition = "gpu", min_nodes = NO_VAL, num_tasks = NO_VAL, cpus_per_task = NO_VAL16,
              pn_min_cpus = NO_VAL16, min_cpus = NO_VAL, sockets_per_node = NO_VAL16 }
  for k, v in pairs(extra) do j[k] = v end
  return j
end

local function time_it(label, fn, base)
  local t0 = os.clock()
  for _ = 1, n do fn() end
  local us = (os.clock() - t0) / n * 1e6
  if base then
    print(string.format("%-34s %8.2f us/call  (%.1fx the baseline)", label, us, us / base))
  else
    print(string.format("%-34s %8.2f us/call", label, us))
  end
  return us
end

local empty = function(j, p, u) return 0 end
local base = time_it("baseline: empty function + table", function() empty(job({}), {}, 0) end)
time_it("GPU job, default set", function()
  slurm_job_submit(job({ tres_per_node = "gres:gpu:h100:4" }), {}, 1000) end, base)
time_it("GPU job, own --cpus-per-gpu", function()
  slurm_job_submit(job({ tres_per_node = "gres:gpu:h100:4", cpus_per_tres = "gres:gpu:8" }), {}, 1000) end, base)
time_it("CPU-only job", function() slurm_job_submit(job({ cpus_per_task = 4 }), {}, 1000) end, base)

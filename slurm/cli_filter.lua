--[[
cli_filter.lua: client-side advice from advisor's CPU-per-GPU policy, in sbatch/salloc/srun.

Install: CliFilterPlugins=lua in slurm.conf, this file as cli_filter.lua next to slurm.conf,
with job_submit.lua (its rule logic; loaded as a library, its entry points unused here) and the
policy advisor-policy.lua (or $ADVISOR_POLICY) in the same directory. docs/slurm-plugins.md.

Before a GPU job is submitted it prints advice (slurm.log_info, on the user's terminal) when the
job's cores per GPU are below the policy's minimum, naming --cpus-per-gpu=N. It sets that
option itself only when ADVISOR_CLI_SET_DEFAULTS=1 in the user's environment (or SET_DEFAULTS
below is true) and the rule's mode is not "advise". Users can bypass a client-side filter:
enforcement belongs to job_submit.lua. Steps inside an allocation (srun in a job) are skipped.
A missing or broken policy prints nothing and changes nothing.
]]

local SET_DEFAULTS = false

local function dir_of_this_script()
  local src = debug.getinfo(1, "S").source or ""
  if src:sub(1, 1) == "@" then return src:sub(2):match("^(.*)/[^/]*$") or "." end
  return "."
end

local lib, lib_err
do
  local ok, mod = pcall(dofile, dir_of_this_script() .. "/job_submit.lua")
  if ok and type(mod) == "table" then
    lib = mod
    lib.QUIET = true
  else
    lib_err = tostring(mod)
  end
end

local UNSET = { [""] = true, ["0"] = true, ["-1"] = true, ["-2"] = true, ["unset"] = true,
  ["(null)"] = true, ["4294967294"] = true, ["65534"] = true, ["NONE"] = true }

local function opt(options, name)
  local ok, v = pcall(function() return options[name] end)
  if not ok or v == nil then return nil end
  v = tostring(v)
  if UNSET[v] then return nil end
  return v
end

local function gres_string(v, prefix)
  -- "gpu:h100:4" / "gres:gpu:h100:4" (--gres), "h100:2" / "2" (--gpus*, no "gpu:" prefix)
  if v == nil then return nil end
  local out = {}
  for item in string.gmatch(v, "[^,]+") do
    item = item:gsub("^gres[:/]", "")
    if prefix and not item:match("^gpu") then item = "gpu:" .. item end
    out[#out + 1] = "gres:" .. item
  end
  return table.concat(out, ",")
end

-- The options as the job_desc fields job_submit.lua reads.
local function as_job(options)
  local nodes = opt(options, "nodes")
  local cpg = opt(options, "cpus-per-gpu")
  return {
    partition = opt(options, "partition"),
    tres_per_node = gres_string(opt(options, "gres"), false) or gres_string(opt(options, "gpus-per-node"), true),
    tres_per_job = gres_string(opt(options, "gpus"), true),
    tres_per_task = gres_string(opt(options, "gpus-per-task"), true),
    tres_per_socket = gres_string(opt(options, "gpus-per-socket"), true),
    cpus_per_tres = cpg and ("gres:gpu:" .. cpg) or nil,
    cpus_per_task = tonumber(opt(options, "cpus-per-task") or ""),
    num_tasks = tonumber(opt(options, "ntasks") or ""),
    min_nodes = tonumber((nodes or ""):match("^(%d+)") or ""),
    pn_min_cpus = tonumber(opt(options, "mincpus") or ""),
  }
end

function slurm_cli_setup_defaults(options, early_pass)
  return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, pack_offset)
  if lib == nil then return slurm.SUCCESS end
  if os.getenv("SLURM_JOB_ID") and not opt(options, "gres") and not opt(options, "gpus") then
    return slurm.SUCCESS -- a step inside an allocation
  end
  local ok, err = pcall(function()
    local policy = lib.policy()
    local d = lib.decide(policy, as_job(options), nil)
    if d.action == "none" then return end
    local set = (SET_DEFAULTS or os.getenv("ADVISOR_CLI_SET_DEFAULTS") == "1")
      and d.rule and d.rule.mode ~= "advise" and d.action == "set" and d.reason == "unset"
    if set then
      options["cpus-per-gpu"] = d.cpus_per_tres:match("(%d+)$")
      slurm.log_info("%s", "advisor: set --cpus-per-gpu=" .. options["cpus-per-gpu"] .. " (site policy)")
    elseif d.action == "set" and d.reason == "unset" then
      slurm.log_info("%s", string.format(
        "advisor: no CPU count given: this job would get 1 CPU for its GPUs; the site recommends --cpus-per-gpu=%d.",
        d.rule.default_cpus_per_gpu))
    else
      slurm.log_info("%s", d.message)
    end
  end)
  if not ok then slurm.log_error("%s", "advisor cli_filter: " .. tostring(err)) end
  return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
  return slurm.SUCCESS
end

advisor_cli_filter = { as_job = as_job, lib = lib, lib_err = lib_err }

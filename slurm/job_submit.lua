--[[
job_submit.lua: applies advisor's CPU-per-GPU policy to GPU jobs inside slurmctld.

Install: JobSubmitPlugins=lua in slurm.conf, this file as job_submit.lua next to slurm.conf, and
the policy written by `advisor policy export --format lua` as advisor-policy.lua in the same
directory (or the path in slurmctld's environment variable ADVISOR_POLICY).
The policy's format is docs/policy-format.md; this plugin's behaviour is docs/slurm-plugins.md.

What it does per job, in microseconds and without ever spawning a process:
  - finds the job's GPUs and GPU type in tres_per_node / tres_per_job / tres_per_task /
    tres_per_socket ("gres:gpu:h100:4", "gres:gpu:2", "gres/gpu:a100:1"),
  - picks the most specific rule: (partition, type) > (partition, "*") > ("*", type) > ("*", "*"),
  - advise: never changes the job, tells the user (slurm.log_user) when below the minimum;
    set-default-when-unset: a job that set no CPU count gets cpus_per_tres = "gres:gpu:<default>";
    enforce-minimum: as above, and --cpus-per-gpu below the minimum is raised to it, while
    --cpus-per-task below it is rejected with the flag to use.
A missing or broken policy file is logged once (slurm.log_error) and every job goes through.

Facts from a real 22.05 slurmctld (the sandbox of scripts/slurm-sandbox): unset numbers are
NO_VAL (4294967294) or NO_VAL16 (65534), unset strings nil; --cpus-per-gpu=8 arrives as
cpus_per_tres = "gres:gpu:8"; setting it on a 2-GPU job gives the job 16 CPUs.
From 23.11 on, the client tools write "gres/gpu:8" and "gres/gpu:h100:4" instead (SchedMD/slurm
src/common/slurm_opt.c: "gres:gpu:%d" up to 23.02, "gres/gpu:%d" from 23.11 to 26.05). Both
spellings are read; a value this plugin sets uses the spelling of the job's own request.
]]

local M = {}

M.POLICY_NAME = "advisor-policy.lua"
M.RELOAD_S = 30 -- without lfs: re-read the policy file at most every this many seconds
M.MODES = { ["advise"] = true, ["set-default-when-unset"] = true, ["enforce-minimum"] = true }

local NO_VAL = 4294967294
local INFINITE = 4294967295
local NO_VAL16 = 65534
local INFINITE16 = 65535

-- A number the user did not set (nil, NO_VAL, NO_VAL16, INFINITE, 0).
function M.unset(v)
  return v == nil or v == NO_VAL or v == NO_VAL16 or v == INFINITE or v == INFINITE16 or v == 0
end

local function num(v)
  if M.unset(v) then return nil end
  return tonumber(v)
end

---------------------------------------------------------------------------------------------
-- The policy file: loaded once, reloaded when it changes; never trusted blindly.
---------------------------------------------------------------------------------------------

local function script_dir()
  local src = debug.getinfo(1, "S").source or ""
  if src:sub(1, 1) == "@" then
    local dir = src:sub(2):match("^(.*)/[^/]*$")
    if dir then return dir end
  end
  return "."
end

function M.policy_path()
  local env = os.getenv("ADVISOR_POLICY")
  if env and env ~= "" then return env end
  return script_dir() .. "/" .. M.POLICY_NAME
end

-- Cores per GPU a rule may ask for: far above any node (NaN, inf and 1e12 are typos or attacks).
M.MAX_CPUS_PER_GPU = 1024

-- Why rule field `name` is not a number in [lo, MAX_CPUS_PER_GPU] (NaN and inf are not), or nil.
function M.bad_count(r, name, lo)
  local v = r[name]
  if type(v) ~= "number" then return name .. " (not a number)" end
  if v ~= v then return name .. " (nan)" end
  if v < lo or v > M.MAX_CPUS_PER_GPU then
    return string.format("%s (%s, outside %d..%d)", name, tostring(v), lo, M.MAX_CPUS_PER_GPU)
  end
  -- Slurm's --cpus-per-gpu is a whole number: 1.5 would silently become 1
  if v ~= math.floor(v) then return name .. " (" .. tostring(v) .. ", not a whole number)" end
  return nil
end

-- Check a policy table; return (policy, nil) or (nil, reason). Bad rules are dropped with a
-- reason each, good ones kept.
function M.validate(p)
  if type(p) ~= "table" then return nil, "the chunk did not return a table" end
  local major = tonumber(p.version)
  if major == nil then return nil, "no version" end
  -- the version is a whole number: 1.9 is not "1 with a minor part", it is a format this
  -- plugin does not know
  if major ~= 1 then return nil, "version " .. tostring(p.version) .. " (this plugin reads 1)" end
  if type(p.rules) ~= "table" then return nil, "no rules table" end
  if #p.rules > M.MAX_RULES then
    return nil, #p.rules .. " rules (more than " .. M.MAX_RULES .. ")"
  end
  local rules, dropped = {}, {}
  for i, r in ipairs(p.rules) do
    local why
    if type(r) ~= "table" then why = "not a table"
    elseif type(r.partition) ~= "string" or r.partition == "" then why = "partition"
    elseif type(r.gpu_type) ~= "string" or r.gpu_type == "" then why = "gpu_type"
    elseif not M.MODES[r.mode] then why = "mode " .. tostring(r.mode)
    else
      why = M.bad_count(r, "min_cpus_per_gpu", 0) or M.bad_count(r, "default_cpus_per_gpu", 1)
      -- a default below the minimum would give a job that sets nothing fewer cores than the
      -- rule itself demands
      if not why and math.floor(r.min_cpus_per_gpu) > math.floor(r.default_cpus_per_gpu) then
        why = string.format("min_cpus_per_gpu (%d above default_cpus_per_gpu %d)",
          math.floor(r.min_cpus_per_gpu), math.floor(r.default_cpus_per_gpu))
      end
    end
    if why then
      dropped[#dropped + 1] = "rule " .. i .. ": bad " .. why
    else
      rules[#rules + 1] = {
        partition = r.partition, gpu_type = string.lower(r.gpu_type), mode = r.mode,
        min_cpus_per_gpu = math.floor(r.min_cpus_per_gpu),
        default_cpus_per_gpu = math.floor(r.default_cpus_per_gpu),
      }
    end
  end
  local index = {}
  for _, r in ipairs(rules) do
    local key = r.partition .. "\0" .. r.gpu_type
    if index[key] == nil then index[key] = r end -- the first of two same-key rules wins
  end
  -- the policy's own stamp, logged at each load so that an admin (and the tests) can tell which
  -- policy slurmctld runs; printable ASCII only, since it goes into slurmctld's log
  local stamp = type(p.generated_at) == "string" and p.generated_at:sub(1, 64) or "?"
  if stamp:find("[^%w%-%.:+_ ]") then stamp = "?" end
  return { version = major, rules = rules, index = index, dropped = dropped, stamp = stamp }, nil
end

-- What evaluating a policy file may cost inside slurmctld: a file is data, so a loop that never
-- ends or a table that grows without bound is stopped and treated as a broken policy. The hook
-- runs on every instruction (a coarser one would let `s = s .. s` double past any memory
-- budget between two looks), so the instruction budget is what bounds a reload's CPU time.
M.MAX_POLICY_BYTES = 1024 * 1024 -- an exported policy of 1000 rules is about 140 KB
M.INSTRUCTION_BUDGET = 100000 -- an exported policy of 1000 rules runs about 10000
M.MEMORY_BUDGET_KB = 64 * 1024 -- growth while it runs; one instruction may overshoot it up to 2x
M.MAX_RULES = 10000
M.MAX_LOGGED_RULES = 10 -- bad rules logged one by one per load; the rest in one summary line

-- Run `chunk` with no metatable on strings (so `("x"):rep(1e9)` finds no string library) and a
-- count hook that stops it past the instruction or memory budget; restore both afterwards.
local function run_budgeted(chunk)
  local string_mt = debug.getmetatable("")
  local old_hook, old_mask, old_count = debug.gethook()
  local base_kb = collectgarbage("count")
  local steps, over = 0, nil
  local function hook()
    steps = steps + 1
    if steps > M.INSTRUCTION_BUDGET then
      over = "ran past its budget of " .. M.INSTRUCTION_BUDGET .. " instructions (a loop?)"
    elseif collectgarbage("count") - base_kb > M.MEMORY_BUDGET_KB then
      over = "allocated past its budget of " .. M.MEMORY_BUDGET_KB .. " KB"
    end
    if over then
      debug.sethook() -- the error must not fire again while it unwinds
      error(over, 0)
    end
  end
  debug.setmetatable("", nil)
  debug.sethook(hook, "", 1)
  local ok, value = pcall(chunk)
  debug.sethook()
  debug.setmetatable("", string_mt)
  if old_hook then debug.sethook(old_hook, old_mask, old_count) end
  if over then
    value = nil
    collectgarbage("collect") -- give back what a memory hog took before it was stopped
    return false, over
  end
  return ok, value
end

-- The policy file's text, at most MAX_POLICY_BYTES + 1 bytes of it; or nil and why not.
function M.read_text(path)
  local fh = io.open(path, "rb")
  if not fh then return nil, "cannot open " .. path end
  local text = fh:read(M.MAX_POLICY_BYTES + 1)
  fh:close()
  return text or "", nil
end

-- Evaluate a policy's text in an empty environment (it can call nothing), on a budget; return
-- (policy, nil) or (nil, why).
function M.eval_policy(text, path)
  if #text > M.MAX_POLICY_BYTES then
    return nil, "larger than " .. M.MAX_POLICY_BYTES .. " bytes"
  end
  -- Lua 5.1's loadstring also loads precompiled bytecode, which its VM does not verify (a
  -- crafted chunk can read and write slurmctld's memory); 5.2+ refuses it with mode "t".
  if text:sub(1, 1) == "\27" then
    return nil, "precompiled Lua bytecode (refused: a policy is read as text only)"
  end
  local chunk, err
  if setfenv then -- Lua 5.1 (Debian's Slurm links liblua5.1)
    chunk, err = loadstring(text, "=" .. path)
    if chunk then setfenv(chunk, {}) end
  else -- Lua 5.2+
    chunk, err = load(text, "=" .. path, "t", {})
  end
  if not chunk then return nil, "not Lua: " .. tostring(err) end
  local ok, value = run_budgeted(chunk)
  if not ok then return nil, "error running it: " .. tostring(value) end
  return M.validate(value)
end

-- Read and evaluate a policy file: (policy, text, nil) or (nil, text or nil, why).
function M.read_policy(path)
  local text, err = M.read_text(path)
  if not text then return nil, nil, err end
  local policy, why = M.eval_policy(text, path)
  return policy, text, why
end

local lfs_ok, lfs = pcall(require, "lfs")
local cache = { path = nil, text = nil, policy = nil, checked = -math.huge, mtime = nil, logged = nil }

-- M.QUIET (set by cli_filter.lua): policy load messages go to debug level, not the terminal.
M.QUIET = false

local function log_error(msg)
  if not slurm then return end
  if M.QUIET then
    if slurm.log_debug then slurm.log_debug("%s", msg) end
  elseif slurm.log_error then
    slurm.log_error("%s", msg)
  end
end

local function log_info(msg)
  if not slurm then return end
  if M.QUIET then
    if slurm.log_debug then slurm.log_debug("%s", msg) end
  elseif slurm.log_info then
    slurm.log_info("%s", msg)
  end
end

-- The current policy (nil when missing or broken): one stat (with lfs) or, without lfs, one
-- small read every RELOAD_S seconds; never a process.
function M.policy(now)
  local path = M.policy_path()
  now = now or os.time()
  if path == cache.path then
    if lfs_ok then
      local mtime = lfs.attributes(path, "modification")
      if mtime == cache.mtime then return cache.policy end
      cache.mtime = mtime
    elseif now - cache.checked < M.RELOAD_S then
      return cache.policy
    end
  end
  cache.checked = now
  local fresh_path = path ~= cache.path
  cache.path = path
  -- compare the text before evaluating it: an unchanged policy, good or hostile, costs one
  -- small read, never a second run
  local text, err = M.read_text(path)
  if text ~= nil and text == cache.text and not fresh_path then return cache.policy end
  local policy
  if text ~= nil then policy, err = M.eval_policy(text, path) end
  cache.text = text
  cache.policy = policy
  if err then
    local msg = "advisor policy " .. path .. ": " .. err .. "; jobs go through unchanged"
    if cache.logged ~= msg then log_error(msg) end
    cache.logged = msg
  else
    cache.logged = nil
    log_info(string.format("advisor policy %s (generated_at %s): %d rules loaded", path,
      policy.stamp, #policy.rules))
    for i, d in ipairs(policy.dropped) do
      if i > M.MAX_LOGGED_RULES then
        log_error(string.format("advisor policy %s: %d more bad rules (ignored; the first %d are logged above)",
          path, #policy.dropped - M.MAX_LOGGED_RULES, M.MAX_LOGGED_RULES))
        break
      end
      log_error("advisor policy " .. path .. ": " .. d .. " (ignored)")
    end
  end
  return policy
end

function M.reset_cache()
  cache = { path = nil, text = nil, policy = nil, checked = -math.huge, mtime = nil, logged = nil }
end

---------------------------------------------------------------------------------------------
-- Reading the job's request
---------------------------------------------------------------------------------------------

-- GPUs in a TRES list string: "gres:gpu:h100:4,gres:shard:2" -> 4, "h100".
-- Returns (count, type or nil); (0, nil) when no GPU is named.
function M.parse_gpu_tres(s)
  if type(s) ~= "string" or s == "" then return 0, nil end
  local total, gtype = 0, nil
  for item in string.gmatch(s, "[^,]+") do
    item = item:gsub("^%s+", ""):gsub("%s+$", "")
    item = item:gsub("^gres[:/]", "")
    local parts = {}
    for p in string.gmatch(item, "[^:]+") do parts[#parts + 1] = p end
    if parts[1] == "gpu" then
      local count, t = 1, nil
      if #parts == 2 then
        if tonumber(parts[2]) then count = tonumber(parts[2]) else t = parts[2] end
      elseif #parts >= 3 then
        t = parts[2]
        count = tonumber(parts[3]) or 1
      end
      total = total + count
      if t and gtype == nil then gtype = string.lower(t) end
    end
  end
  return total, gtype
end

-- cpus_per_tres "gres:gpu:8" (or "gres/gpu:8") -> 8; nil when not set for GPUs.
function M.parse_cpus_per_gpu(s)
  if type(s) ~= "string" then return nil end
  for item in string.gmatch(s, "[^,]+") do
    local n = item:match("^gres[:/]gpu:(%d+)$") or item:match("^gpu:(%d+)$")
    if n then return tonumber(n) end
  end
  return nil
end

-- The TRES prefix to write for this job: "gres/" when its own request uses it (Slurm 23.11+),
-- else "gres:" (what 22.05 and 23.02 write).
function M.gres_prefix(job)
  for _, f in ipairs({ "cpus_per_tres", "tres_per_node", "tres_per_job", "tres_per_task", "tres_per_socket" }) do
    local v = job[f]
    if type(v) == "string" and v:find("gres/", 1, true) then return "gres/" end
  end
  return "gres:"
end

-- What the job asks for: gpus (total), gpu_type, cpus (total, as asked), how it set them.
function M.request(job)
  local nodes = num(job.min_nodes) or 1
  local tasks = num(job.num_tasks)
  local per_node, t1 = M.parse_gpu_tres(job.tres_per_node)
  local per_job, t2 = M.parse_gpu_tres(job.tres_per_job)
  local per_task, t3 = M.parse_gpu_tres(job.tres_per_task)
  local per_socket, t4 = M.parse_gpu_tres(job.tres_per_socket)
  local gpus = per_job + per_node * nodes + per_task * (tasks or 1)
    + per_socket * (num(job.sockets_per_node) or 1) * nodes
  local r = { gpus = gpus, gpu_type = t1 or t2 or t3 or t4, tasks = tasks or nodes }
  r.cpus_per_gpu = M.parse_cpus_per_gpu(job.cpus_per_tres)
  r.cpus_per_task = num(job.cpus_per_task)
  r.mincpus = num(job.pn_min_cpus)
  if r.cpus_per_gpu then
    r.set_by = "--cpus-per-gpu"
    r.cpus = r.cpus_per_gpu * gpus
  elseif r.cpus_per_task then
    r.set_by = "--cpus-per-task"
    r.cpus = r.cpus_per_task * r.tasks
  elseif r.mincpus and r.mincpus > 1 then
    r.set_by = "--mincpus"
    r.cpus = r.mincpus * nodes
  else
    r.set_by = nil
    r.cpus = math.max(r.tasks, num(job.min_cpus) or 1) -- Slurm's default: one CPU per task
  end
  return r
end

-- The job's partition for matching: the first listed one, else the default partition.
function M.partition_of(job, part_list)
  local p = job.partition
  if type(p) == "string" and p ~= "" then return (p:match("^([^,]+)")) end
  if type(part_list) == "table" then
    for name, part in pairs(part_list) do
      if type(part) == "table" and (part.flag_default == 1 or part.flag_default == true) then
        return part.name or name
      end
    end
  end
  return nil
end

function M.match(policy, partition, gpu_type)
  local idx = policy.index
  local t = gpu_type or "*"
  local p = partition or "*"
  return idx[p .. "\0" .. t] or idx[p .. "\0*"] or idx["*\0" .. t] or idx["*\0*"]
end

---------------------------------------------------------------------------------------------
-- The decision (pure: no Slurm calls; the tests run it with lua5.1)
---------------------------------------------------------------------------------------------

-- Returns a decision table:
--   action = "none" | "advise" | "set" | "reject"; reason = "unset" | "raise" (for "set")
--   cpus_per_tres = string to set (for "set"), message = text for the user (or nil)
function M.decide(policy, job, part_list)
  if not policy then return { action = "none" } end
  local req = M.request(job)
  if req.gpus <= 0 then return { action = "none" } end
  local partition = M.partition_of(job, part_list)
  local rule = M.match(policy, partition, req.gpu_type)
  if not rule then return { action = "none" } end
  local have = req.cpus / req.gpus
  local where = string.format("%s GPU%s%s", (req.gpu_type or "untyped"), (req.gpus == 1 and "" or "s"),
    partition and (" in partition " .. partition) or "")
  local below = have < rule.min_cpus_per_gpu
  local advice = string.format(
    "advisor: this job gets %s CPU cores per GPU (%d %s); LLM serving needs at least %d "
    .. "per GPU here, or the GPUs wait on the CPU. Ask for --cpus-per-gpu=%d.",
    (have == math.floor(have)) and string.format("%d", have) or string.format("%.2f", have),
    req.gpus, where, rule.min_cpus_per_gpu, rule.default_cpus_per_gpu)
  if rule.mode == "advise" then
    if below then return { action = "advise", message = advice, rule = rule } end
    return { action = "none", rule = rule }
  end
  if req.set_by == nil then
    return {
      action = "set", reason = "unset", rule = rule,
      cpus_per_tres = M.gres_prefix(job) .. "gpu:" .. rule.default_cpus_per_gpu,
      message = string.format("advisor: no CPU count given: this job gets --cpus-per-gpu=%d (%d CPUs for %d GPUs).",
        rule.default_cpus_per_gpu, rule.default_cpus_per_gpu * req.gpus, req.gpus),
    }
  end
  if not below then return { action = "none", rule = rule } end
  if rule.mode == "enforce-minimum" then
    if req.set_by == "--cpus-per-gpu" then
      return {
        action = "set", reason = "raise", rule = rule,
        cpus_per_tres = M.gres_prefix(job) .. "gpu:" .. rule.min_cpus_per_gpu,
        message = string.format("advisor: --cpus-per-gpu=%d raised to the minimum of %d here.",
          req.cpus_per_gpu, rule.min_cpus_per_gpu),
      }
    end
    return {
      action = "reject", rule = rule,
      message = string.format("advisor: %s gives %s CPU cores per GPU, below the minimum of %d here; "
        .. "submit with --cpus-per-gpu=%d instead.", req.set_by,
        (have == math.floor(have)) and string.format("%d", have) or string.format("%.2f", have),
        rule.min_cpus_per_gpu, rule.default_cpus_per_gpu),
    }
  end
  return { action = "advise", message = advice, rule = rule } -- set-default mode, own value, low
end

---------------------------------------------------------------------------------------------
-- The Slurm entry points
---------------------------------------------------------------------------------------------

local function ok()
  return (slurm and slurm.SUCCESS) or 0
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  local okp, decision = pcall(function() return M.decide(M.policy(), job_desc, part_list) end)
  if not okp then
    log_error("advisor job_submit: " .. tostring(decision) .. "; job left unchanged")
    return ok()
  end
  if decision.action == "set" then
    job_desc.cpus_per_tres = decision.cpus_per_tres
  end
  if decision.message and slurm and slurm.log_user then
    slurm.log_user("%s", decision.message)
  end
  if decision.action == "reject" then
    return (slurm and (slurm.ESLURM_INVALID_GRES or slurm.ERROR)) or 1
  end
  return ok()
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return ok()
end

advisor_job_submit = M -- for tests (tests/slurm/lua/) and for a site's own wrapper
return M

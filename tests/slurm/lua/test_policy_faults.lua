-- Hostile and broken policy files fed to slurm/job_submit.lua, run by plain lua5.1 (the Lua that
-- Debian's slurmctld links): a policy that loops forever, one that allocates without bound (by
-- table growth, string doubling, or the string library reached through the string metatable),
-- and rules with NaN, inf or 1e12 cores per GPU. Each must leave every job unchanged with one
-- logged error, and the plugin's Lua state as it was (string methods, hooks, memory).
-- `slurm` below is a stand-in for the table slurmctld provides (it records log calls).
-- Usage: lua5.1 tests/slurm/lua/test_policy_faults.lua REPO_ROOT TMPDIR

local root, tmp = arg[1], arg[2]
local logs = { user = {}, error = {}, info = {} }
slurm = {
  SUCCESS = 0, ERROR = -1, ESLURM_INVALID_GRES = 2072,
  log_user = function(fmt, ...) logs.user[#logs.user + 1] = string.format(fmt, ...) end,
  log_error = function(fmt, ...) logs.error[#logs.error + 1] = string.format(fmt, ...) end,
  log_info = function(fmt, ...) logs.info[#logs.info + 1] = string.format(fmt, ...) end,
}
local M = dofile(root .. "/slurm/job_submit.lua")

local NO_VAL, NO_VAL16 = 4294967294, 65534
local failures, count = 0, 0

local function test(name, fn)
  count = count + 1
  for k in pairs(logs) do logs[k] = {} end
  M.reset_cache()
  local ok, err = pcall(fn)
  if ok then
    print("ok " .. count .. " " .. name)
  else
    failures = failures + 1
    print("not ok " .. count .. " " .. name .. ": " .. tostring(err))
  end
end

local function eq(got, want, what)
  if got ~= want then
    error(string.format("%s: got %s, want %s", what or "value", tostring(got), tostring(want)), 2)
  end
end

local function has(list, needle, what)
  for _, s in ipairs(list) do
    if s:find(needle, 1, true) then return s end
  end
  error(string.format("%s: no line with %q in {%s}", what or "log", needle, table.concat(list, " | ")), 2)
end

local function write(path, text)
  local fh = assert(io.open(path, "w"))
  fh:write(text)
  fh:close()
end

local function job()
  return { min_nodes = NO_VAL, num_tasks = NO_VAL, cpus_per_task = NO_VAL16, pn_min_cpus = NO_VAL16,
           min_cpus = NO_VAL, sockets_per_node = NO_VAL16, partition = "gpu",
           tres_per_node = "gres:gpu:h100:2" }
end

local GOOD_RULE = '{ partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, '
  .. 'default_cpus_per_gpu = 8, mode = "set-default-when-unset" }'

-- Submit three jobs under the policy text; each must go through unchanged, with one error logged
-- that contains `reason`; the Lua state must be as before.
local function jobs_pass_unchanged(name, text, reason)
  local path = tmp .. "/" .. name .. ".lua"
  local old = os.getenv
  os.getenv = function(k) if k == "ADVISOR_POLICY" then return path end return old(k) end
  write(path, text)
  for k in pairs(logs) do logs[k] = {} end
  collectgarbage("collect")
  local before_kb = collectgarbage("count")
  local t0 = os.clock()
  for _ = 1, 3 do
    local j = job()
    eq(slurm_job_submit(j, {}, 1000), 0, name .. ": rc")
    eq(j.cpus_per_tres, nil, name .. ": job unchanged")
  end
  local cpu_s = os.clock() - t0
  os.getenv = old
  eq(#logs.error, 1, name .. ": errors logged")
  has(logs.error, reason, name)
  has(logs.error, "jobs go through unchanged", name)
  eq(#logs.user, 0, name .. ": messages to the user")
  eq(debug.gethook(), nil, name .. ": hook left installed")
  eq(("abc"):upper(), "ABC", name .. ": string methods after the load")
  -- Lua halves its concatenation buffer once per collection: a few give it back
  for _ = 1, 8 do collectgarbage("collect") end
  local grown_kb = collectgarbage("count") - before_kb
  -- the plugin keeps the file's text (to notice a change); nothing else may stay
  assert(grown_kb < 1024 + #text / 1024, name .. ": memory kept after the load: " .. grown_kb .. " KB")
  -- the budget is what stops it, not a stack overflow or an out-of-memory error
  assert(cpu_s < 10, name .. ": took " .. cpu_s .. " s of CPU")
  return logs.error[1]
end

test("a policy that loops forever is stopped by the instruction budget", function()
  jobs_pass_unchanged("loop", "while true do end\nreturn { version = 1, rules = {} }",
    "budget of " .. M.INSTRUCTION_BUDGET .. " instructions")
end)

test("a policy that recurses forever through tail calls is stopped", function()
  jobs_pass_unchanged("tailcall", "local function f(n) return f(n + 1) end\nreturn f(1)",
    "instructions")
end)

test("a policy that grows a table without bound is stopped by the memory budget", function()
  jobs_pass_unchanged("table-hog",
    "local s = '" .. string.rep("x", 65536) .. "'\n"
      .. "local t = {}\nfor i = 1, 1e9 do t[i] = s .. i end\nreturn { version = 1, rules = t }",
    "budget of " .. M.MEMORY_BUDGET_KB .. " KB")
end)

test("a policy that doubles a string without bound is stopped by the memory budget", function()
  jobs_pass_unchanged("concat-hog",
    "local s = 'x'\nfor i = 1, 40 do s = s .. s end\nreturn { version = 1, rules = { s } }",
    "KB")
end)

test("a policy cannot reach the string library through the string metatable", function()
  -- ("x"):rep(2^31) would allocate 2 GB in one instruction, before any hook could see it
  local msg = jobs_pass_unchanged("rep-hog",
    "local big = ('x'):rep(2^31)\nreturn { version = 1, rules = { big } }",
    "error running it")
  assert(msg:find("index", 1, true), msg) -- "attempt to index a string value"
end)

test("a policy cannot reach globals, metatables or the debug library", function()
  jobs_pass_unchanged("escape",
    "setmetatable({}, {})\nreturn { version = 1, rules = {} }", "error running it")
  jobs_pass_unchanged("escape-debug",
    "debug.sethook()\nreturn { version = 1, rules = {} }", "error running it")
end)

test("a policy file larger than the size limit is refused unread", function()
  local big = "return { version = 1, rules = {} }\n--" .. string.rep("x", M.MAX_POLICY_BYTES) .. "\n"
  jobs_pass_unchanged("huge-file", big, "larger than")
end)

test("NaN, inf, -inf and 1e12 cores per GPU are dropped, naming the rule and field", function()
  local path = tmp .. "/bad-numbers.lua"
  local old = os.getenv
  os.getenv = function(k) if k == "ADVISOR_POLICY" then return path end return old(k) end
  write(path, "return { version = 1, rules = {\n"
    .. '  { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 0/0, default_cpus_per_gpu = 8, mode = "enforce-minimum" },\n'
    .. '  { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, default_cpus_per_gpu = 1/0, mode = "enforce-minimum" },\n'
    .. '  { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = -1/0, default_cpus_per_gpu = 8, mode = "enforce-minimum" },\n'
    .. '  { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, default_cpus_per_gpu = 1e12, mode = "enforce-minimum" },\n'
    .. "  " .. GOOD_RULE .. ",\n} }\n")
  local p = M.policy(1000)
  os.getenv = old
  assert(p, "the policy with one good rule loads")
  eq(#p.rules, 1, "rules kept")
  eq(p.rules[1].default_cpus_per_gpu, 8, "the good rule's default")
  eq(#p.dropped, 4, "rules dropped")
  has(logs.error, "rule 1: bad min_cpus_per_gpu (nan)", "NaN")
  has(logs.error, "rule 2: bad default_cpus_per_gpu (inf, outside 1..1024)", "inf")
  has(logs.error, "rule 3: bad min_cpus_per_gpu (-inf, outside 0..1024)", "-inf")
  has(logs.error, "rule 4: bad default_cpus_per_gpu (1000000000000, outside 1..1024)", "1e12")
  -- the job gets the good rule's default, not a NaN or 1e12 cpus_per_tres
  local j = job()
  os.getenv = function(k) if k == "ADVISOR_POLICY" then return path end return old(k) end
  eq(slurm_job_submit(j, {}, 1000), 0, "rc")
  os.getenv = old
  eq(j.cpus_per_tres, "gres:gpu:8", "cpus_per_tres")
end)

test("after a hostile policy is replaced by a good one, jobs get the good one", function()
  local path = tmp .. "/replaced.lua"
  local old = os.getenv
  os.getenv = function(k) if k == "ADVISOR_POLICY" then return path end return old(k) end
  write(path, "while true do end")
  eq(M.policy(1000), nil, "the looping policy")
  write(path, "return { version = 1, rules = { " .. GOOD_RULE .. " } }")
  local p = M.policy(1000 + M.RELOAD_S + 1)
  os.getenv = old
  assert(p, "the good policy loads after the looping one")
  eq(#p.rules, 1, "rules")
end)

print(string.format("1..%d", count))
if failures > 0 then
  print(failures .. " failed")
  os.exit(1)
end

-- Hostile and broken policy files fed to slurm/job_submit.lua, run by plain lua5.1 (the Lua that
-- Debian's slurmctld links): a policy that loops forever, one that allocates without bound (by
-- table growth, string doubling, or the string library reached through the string metatable),
-- and rules with NaN, inf or 1e12 cores per GPU. Each must leave every job unchanged with one
-- logged error, and the plugin's Lua state as it was (string methods, hooks, memory).
-- The harness (tests/slurm/lua/harness.lua) stands in for the `slurm` table slurmctld provides.
-- Usage: lua5.1 tests/slurm/lua/test_policy_faults.lua REPO_ROOT TMPDIR

local H = dofile(arg[1] .. "/tests/slurm/lua/harness.lua")
local M = dofile(H.root .. "/slurm/job_submit.lua")
H.before_each = M.reset_cache
local tmp, logs, test, eq, has, write = H.tmp, H.logs, H.test, H.eq, H.has, H.write

local function job()
  return H.job({ partition = "gpu", tres_per_node = "gres:gpu:h100:2" })
end

-- Every hostile policy fed to jobs_pass_unchanged: refused as promised (jobs unchanged, one
-- error naming the reason), loaded anyway (a job changed), crashed (an error escaped the
-- plugin), or wrong (refused, but not as promised).
local tally = { tried = 0, refused = 0, loaded = 0, crashed = 0, wrong = 0 }

local GOOD_RULE = '{ partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, '
  .. 'default_cpus_per_gpu = 8, mode = "set-default-when-unset" }'

-- Submit three jobs under the policy text; each must go through unchanged, with one error logged
-- that contains `reason`; the Lua state must be as before. Counted in the tally.
local function jobs_pass_unchanged(name, text, reason)
  local path = tmp .. "/" .. name .. ".lua"
  write(path, text)
  H.clear_logs()
  collectgarbage("collect")
  local before_kb = collectgarbage("count")
  local t0 = os.clock()
  tally.tried = tally.tried + 1
  local changed, crashed = false, false
  H.with_policy(path, function()
    for _ = 1, 3 do
      local j = job()
      local ok, rc = pcall(slurm_job_submit, j, {}, 1000)
      if not ok or rc ~= 0 then crashed = true end
      if j.cpus_per_tres ~= nil then changed = true end
    end
  end)
  local cpu_s = os.clock() - t0
  local one_error = #logs.error == 1 and logs.error[1]:find(reason, 1, true) ~= nil
  if crashed then tally.crashed = tally.crashed + 1
  elseif changed then tally.loaded = tally.loaded + 1
  elseif not one_error then tally.wrong = tally.wrong + 1
  else tally.refused = tally.refused + 1 end
  eq(crashed, false, name .. ": an error escaped the plugin")
  eq(changed, false, name .. ": job unchanged")
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
  write(path, "return { version = 1, rules = {\n"
    .. '  { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 0/0, default_cpus_per_gpu = 8, mode = "enforce-minimum" },\n'
    .. '  { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, default_cpus_per_gpu = 1/0, mode = "enforce-minimum" },\n'
    .. '  { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = -1/0, default_cpus_per_gpu = 8, mode = "enforce-minimum" },\n'
    .. '  { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 4, default_cpus_per_gpu = 1e12, mode = "enforce-minimum" },\n'
    .. "  " .. GOOD_RULE .. ",\n} }\n")
  local p = H.with_policy(path, M.policy, 1000)
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
  eq(H.with_policy(path, slurm_job_submit, j, {}, 1000), 0, "rc")
  eq(j.cpus_per_tres, "gres:gpu:8", "cpus_per_tres")
end)

test("a fraction of a core per GPU is dropped, never rounded down", function()
  local path = tmp .. "/fraction.lua"
  write(path, "return { version = 1, rules = {\n"
    .. '  { partition = "gpu", gpu_type = "*", min_cpus_per_gpu = 1, default_cpus_per_gpu = 1.5, mode = "enforce-minimum" },\n'
    .. "  " .. GOOD_RULE .. ",\n} }\n")
  local p = H.with_policy(path, M.policy, 1000)
  assert(p, "the policy with one good rule loads")
  eq(#p.rules, 1, "rules kept")
  has(logs.error, "rule 1: bad default_cpus_per_gpu (1.5, not a whole number)", "1.5")
end)

test("after a hostile policy is replaced by a good one, jobs get the good one", function()
  local path = tmp .. "/replaced.lua"
  write(path, "while true do end")
  eq(H.with_policy(path, M.policy, 1000), nil, "the looping policy")
  write(path, "return { version = 1, rules = { " .. GOOD_RULE .. " } }")
  local p = H.with_policy(path, M.policy, 1000 + M.RELOAD_S + 1)
  assert(p, "the good policy loads after the looping one")
  eq(#p.rules, 1, "rules")
end)

-- Issue 30, items 23-25 ------------------------------------------------------------------------

-- Count the runs of M.eval_policy (the one place a policy's text is compiled and run).
local function counting_evals()
  local real, runs = M.eval_policy, { n = 0 }
  M.eval_policy = function(...) runs.n = runs.n + 1; return real(...) end
  return runs, function() M.eval_policy = real end
end

test("an unchanged policy is compared before it is run: a looping one runs once, not per reload", function()
  local path = tmp .. "/loop-unchanged.lua"
  write(path, "while true do end")
  local runs, restore = counting_evals()
  local ok, err = pcall(function()
    for i = 0, 9 do
      eq(H.with_policy(path, M.policy, 1000 + i * (M.RELOAD_S + 1)), nil, "reload " .. i)
    end
    eq(runs.n, 1, "runs over ten reloads of the same text")
    eq(#logs.error, 1, "logged once")
    -- a changed text is run again, at once
    write(path, "return { version = 1, rules = { " .. GOOD_RULE .. " } }")
    assert(H.with_policy(path, M.policy, 1000 + 11 * (M.RELOAD_S + 1)), "the new text loads")
    eq(runs.n, 2, "runs after the change")
  end)
  restore()
  assert(ok, err)
end)

test("a reload is capped (100,000 instructions, 1 MB of text) and a 1000-rule policy still fits", function()
  local rules = {}
  for i = 1, 1000 do
    rules[i] = string.format('  { partition = "p%d", gpu_type = "h100", min_cpus_per_gpu = 4, '
      .. 'default_cpus_per_gpu = 8, mode = "set-default-when-unset" },', i)
  end
  local path = tmp .. "/thousand.lua"
  write(path, "return { version = 1, rules = {\n" .. table.concat(rules, "\n") .. "\n} }\n")
  local p = H.with_policy(path, M.policy, 1000)
  assert(p, "a policy of 1000 rules loads: " .. table.concat(logs.error, " | "))
  eq(#p.rules, 1000, "rules")
  -- a reload of a looping policy costs at most 100,000 instructions (each under the hook), and
  -- a 2 MB file is not compiled at all
  local msg = jobs_pass_unchanged("loop-capped", "local n = 0\nwhile true do n = n + 1 end", "budget of")
  local budget = tonumber(msg:match("budget of (%d+) instructions"))
  assert(budget and budget <= 100000, msg)
  jobs_pass_unchanged("two-megabytes",
    "return { version = 1, rules = {} }\n--" .. string.rep("x", 2 * 1024 * 1024) .. "\n", "larger than")
  jobs_pass_unchanged("just-over-the-size-limit",
    "return { version = 1, rules = {} }\n--" .. string.rep("x", M.MAX_POLICY_BYTES) .. "\n",
    "larger than " .. M.MAX_POLICY_BYTES .. " bytes")
end)

test("bad rules are logged one by one up to a cap, then in one summary line", function()
  local n = 5000
  local path = tmp .. "/many-bad-rules.lua"
  write(path, "local r, bad = {}, { partition = 'p', gpu_type = 't', mode = 'advise', "
    .. "min_cpus_per_gpu = 0/0, default_cpus_per_gpu = 8 }\nfor i = 1, " .. n .. " do r[i] = bad end\n"
    .. "r[#r + 1] = " .. GOOD_RULE .. "\nreturn { version = 1, rules = r }")
  local p = H.with_policy(path, M.policy, 1000)
  assert(p, "the good rule loads")
  eq(#p.rules, 1, "rules kept"); eq(#p.dropped, n, "rules dropped")
  eq(#logs.error, M.MAX_LOGGED_RULES + 1, "error lines")
  has(logs.error, "rule 1: bad min_cpus_per_gpu (nan) (ignored)", "the first")
  eq(logs.error[#logs.error], "advisor policy " .. path .. ": " .. (n - M.MAX_LOGGED_RULES)
    .. " more bad rules (ignored; the first " .. M.MAX_LOGGED_RULES .. " are logged above)", "summary")
  -- a 212-byte policy that builds 120,000 bad rules: refused in one line
  jobs_pass_unchanged("120k-bad-rules",
    "local r, bad = {}, { partition = 'p', gpu_type = 't', mode = 'advise', min_cpus_per_gpu = 0/0, "
      .. "default_cpus_per_gpu = 8 }\nfor i = 1, 120000 do r[i] = bad end\nreturn { version = 1, rules = r }",
    "error running it")
end)

test("precompiled bytecode is refused before it is loaded, even where Lua 5.1 would run it", function()
  local good = assert(loadstring("return { version = 1, rules = { " .. GOOD_RULE .. " } }"))
  local bytecode = string.dump(good)
  eq(bytecode:sub(1, 1), "\27", "string.dump writes bytecode")
  jobs_pass_unchanged("bytecode", bytecode, "precompiled Lua bytecode")
  -- what luac5.1 writes is the same kind of file
  jobs_pass_unchanged("bytecode-luac", "\27Lua\81\0" .. bytecode:sub(7), "precompiled Lua bytecode")
end)

test("a rule whose minimum is above its default is dropped with a log line; equal is fine", function()
  local path = tmp .. "/min-above-default.lua"
  write(path, "return { version = 1, rules = {\n"
    .. '  { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 12, default_cpus_per_gpu = 8, mode = "enforce-minimum" },\n'
    .. '  { partition = "gpu", gpu_type = "*", min_cpus_per_gpu = 6, default_cpus_per_gpu = 6, mode = "set-default-when-unset" },\n'
    .. "} }\n")
  local p = H.with_policy(path, M.policy, 1000)
  assert(p, "the policy loads")
  eq(#p.rules, 1, "rules kept"); eq(#p.dropped, 1, "rules dropped")
  has(logs.error, "rule 1: bad min_cpus_per_gpu (12 above default_cpus_per_gpu 8) (ignored)", "min > default")
  -- the h100 job falls to the (gpu, *) rule: 6 per GPU, never the dropped rule's default of 8
  local j = job()
  eq(H.with_policy(path, slurm_job_submit, j, {}, 1000), 0, "rc")
  eq(j.cpus_per_tres, "gres:gpu:6", "cpus_per_tres")
end)

test("version 1.9 is a version this plugin does not read, not version 1", function()
  for _, v in ipairs({ "1.9", "1.5", "0.9", "'1.9'" }) do
    jobs_pass_unchanged("version-" .. v:gsub("'", "s"),
      "return { version = " .. v .. ", rules = { " .. GOOD_RULE .. " } }", "(this plugin reads 1)")
  end
  local p = assert(M.validate({ version = 1.0, rules = {} }), "1.0 is 1")
  eq(p.version, 1, "version")
end)

print(string.format("# fault matrix (lua policy): tried %d, refused %d, loaded %d, crashed %d, wrong %d",
  tally.tried, tally.refused, tally.loaded, tally.crashed, tally.wrong))
H.done()

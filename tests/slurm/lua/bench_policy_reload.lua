-- What a policy reload costs slurm/job_submit.lua without lua-filesystem (the RELOAD_S path), in
-- CPU seconds of this lua5.1 process: the first load of a policy, and a reload of the same,
-- unchanged text, for an exported policy and for hostile ones (a loop, a file at the size limit,
-- a 191-byte policy that builds 120,000 bad rules, one of 5,000). Also counts the log lines each
-- first load writes. Figures and how they were taken: docs/slurm-plugins.md.
-- Usage: lua5.1 tests/slurm/lua/bench_policy_reload.lua REPO_ROOT TMPDIR [EXPORTED_POLICY]

local root, tmp, exported = arg[1], arg[2], arg[3]
local lines = 0
local function count() lines = lines + 1 end
slurm = { SUCCESS = 0, ERROR = -1, log_user = count, log_error = count, log_info = count,
          log_debug = count }
local path
local real_getenv = os.getenv
os.getenv = function(k) if k == "ADVISOR_POLICY" then return path end return real_getenv(k) end
local M = dofile(root .. "/slurm/job_submit.lua")

local function write(p, text)
  local fh = assert(io.open(p, "wb")); fh:write(text); fh:close()
end

local cases = {
  { "loop", "while true do end" },
  { "size-limit", "return { version = 1, rules = {} }\n--"
      .. string.rep("x", (M.MAX_POLICY_BYTES or 4194304) - 40) .. "\n" },
  { "120k-bad-rules", "local r, bad = {}, { partition = 'p', gpu_type = 't', mode = 'advise', "
      .. "min_cpus_per_gpu = 0/0, default_cpus_per_gpu = 8 }\nfor i = 1, 120000 do r[i] = bad end\n"
      .. "return { version = 1, rules = r }" },
  { "5000-bad-rules", "local r, bad = {}, { partition = 'p', gpu_type = 't', mode = 'advise', "
      .. "min_cpus_per_gpu = 0/0, default_cpus_per_gpu = 8 }\nfor i = 1, 5000 do r[i] = bad end\n"
      .. "return { version = 1, rules = r }" },
}
if exported and exported ~= "" then
  local fh = assert(io.open(exported, "rb")); cases[#cases + 1] = { "exported", fh:read("*a") }; fh:close()
end

print(string.format("%-16s %8s %12s %12s %10s", "policy", "bytes", "first_ms", "reload_ms", "log_lines"))
for _, case in ipairs(cases) do
  path = tmp .. "/bench-" .. case[1] .. ".lua"
  write(path, case[2])
  M.reset_cache()
  lines = 0
  local t0 = os.clock()
  M.policy(1000)
  local first = os.clock() - t0
  local first_lines = lines
  local n = 5
  t0 = os.clock()
  for i = 1, n do M.policy(1000 + i * (M.RELOAD_S + 1)) end -- each call is a RELOAD_S re-read
  local reload = (os.clock() - t0) / n
  print(string.format("%-16s %8d %12.2f %12.3f %10d", case[1], #case[2], first * 1000, reload * 1000,
    first_lines))
end

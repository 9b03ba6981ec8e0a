-- The one harness of the Lua plugin tests (tests/slurm/lua/test_*.lua), run by plain lua5.1.
-- It installs `slurm`, a stand-in for the table slurmctld provides that records every log call
-- in H.logs, and gives each test file TAP output (`ok N name`, `not ok N name: why`, `1..N`),
-- assertions, a job as slurmctld 22.05 hands it over, and a policy path in ADVISOR_POLICY.
-- Usage, in a test file run as `lua5.1 FILE REPO_ROOT TMPDIR [...]`:
--   local H = dofile(arg[1] .. "/tests/slurm/lua/harness.lua")
--   H.before_each = M.reset_cache   -- what to reset before every test
--   H.test("what must hold", function() ... end)
--   H.done()

local H = { root = arg[1], tmp = arg[2] }
H.NO_VAL, H.NO_VAL16 = 4294967294, 65534
H.logs = { user = {}, error = {}, info = {}, debug = {} }

local function recorder(kind)
  return function(fmt, ...) local l = H.logs[kind]; l[#l + 1] = string.format(fmt, ...) end
end

slurm = {
  SUCCESS = 0, ERROR = -1, ESLURM_INVALID_GRES = 2072,
  log_user = recorder("user"), log_error = recorder("error"), log_info = recorder("info"),
  log_debug = recorder("debug"),
}

local failures, count = 0, 0

function H.clear_logs()
  for _, list in pairs(H.logs) do
    for i = #list, 1, -1 do list[i] = nil end
  end
end

-- Run one test: logs cleared, H.before_each() called, errors reported as `not ok`.
function H.test(name, fn)
  count = count + 1
  H.clear_logs()
  if H.before_each then H.before_each() end
  local ok, err = pcall(fn)
  if ok then
    print("ok " .. count .. " " .. name)
  else
    failures = failures + 1
    print("not ok " .. count .. " " .. name .. ": " .. tostring(err))
  end
end

-- The plan line; exit 1 when a test failed.
function H.done()
  print(string.format("1..%d", count))
  if failures > 0 then
    print(failures .. " failed")
    os.exit(1)
  end
end

function H.eq(got, want, what)
  if got ~= want then
    error(string.format("%s: got %s, want %s", what or "value", tostring(got), tostring(want)), 2)
  end
end

-- The first line of `list` containing `needle` (plain text); an error naming them all if none.
function H.has(list, needle, what)
  for _, s in ipairs(list) do
    if s:find(needle, 1, true) then return s end
  end
  error(string.format("%s: no line with %q in {%s}", what or "log", needle, table.concat(list, " | ")), 2)
end

function H.write(path, text)
  local fh = assert(io.open(path, "wb"))
  fh:write(text)
  fh:close()
end

-- A job as slurmctld 22.05 hands it over (unset numbers NO_VAL/NO_VAL16, unset strings nil),
-- with `fields` set on top.
function H.job(fields)
  local j = { min_nodes = H.NO_VAL, num_tasks = H.NO_VAL, cpus_per_task = H.NO_VAL16,
              pn_min_cpus = H.NO_VAL16, min_cpus = H.NO_VAL, sockets_per_node = H.NO_VAL16 }
  for k, v in pairs(fields or {}) do j[k] = v end
  return j
end

-- Run fn() with os.getenv("ADVISOR_POLICY") returning `path`; os.getenv is restored even when
-- fn fails.
function H.with_policy(path, fn, ...)
  local real = os.getenv
  os.getenv = function(k) if k == "ADVISOR_POLICY" then return path end return real(k) end
  local results = { pcall(fn, ...) }
  os.getenv = real
  if not results[1] then error(results[2], 0) end
  return (table.unpack or unpack)(results, 2)
end

return H

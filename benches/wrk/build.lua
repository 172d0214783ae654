-- wrk script for `proem serve` (docs/PERFORMANCE.md, "Round three"):
-- POST /v1/agents/<agent>/build with a JSON turn, keep-alive.
--
--   PROEM_WRK_CLOCK=same   the same turn every request (a memo hit)
--   PROEM_WRK_CLOCK=second a new second every request (same day: a memo hit
--                          when no plugin hook sees the clock)
--   PROEM_WRK_CLOCK=day    a new day every request (the build memo misses)
--   PROEM_WRK_AGENT        the agent id (default atlas)
--
-- wrk -t2 -c16 -d10s --latency -s benches/wrk/build.lua http://127.0.0.1:PORT
-- Each wrk thread counts its own clock from its own start, so no two
-- threads send the same clock.

local clock = os.getenv("PROEM_WRK_CLOCK") or "same"
local agent = os.getenv("PROEM_WRK_AGENT") or "atlas"
local start = 1795253400 -- 2026-11-21T09:30:00Z
local step = ({ same = 0, second = 1, day = 86400 })[clock]
assert(step, "PROEM_WRK_CLOCK: same, second or day")

local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("offset", threads * 40000)
end

local n = 0
local path = "/v1/agents/" .. agent .. "/build"
local headers = { ["Content-Type"] = "application/json" }

function request()
  n = n + 1
  local t = start
  if step > 0 then
    -- A day step stays within ~30 years; a second step within one day.
    local k = ((offset or 0) + n) % (step == 1 and 52000 or 11000)
    t = start + k * step
  end
  local body = string.format('{"now":"%s"}', os.date("!%Y-%m-%dT%H:%M:%SZ", t))
  return wrk.format("POST", path, headers, body)
end

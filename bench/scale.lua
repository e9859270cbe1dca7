-- wrk script for bench/scale.sh: a small steady client during a large send, one connection and one
-- request every PACE_MS (default 100) ms. SCALE_KIND picks the request:
--   summary:    GET /v1/notifications/NOTIFICATION_ID (server key in PUSH_KEY)
--   recipients: GET /v1/notifications/NOTIFICATION_ID/recipients?page=P&limit=50, P random in 1..LIST_PAGES
--   register:   bench/registration.lua's registrations (public key in PUSH_KEY)
-- Prints bench/report.lua's summary (rate, p50/p99/max, errors including non-2xx).
local kind = os.getenv("SCALE_KIND") or "summary"
local pace = tonumber(os.getenv("PACE_MS") or "100")
local dir = (debug.getinfo(1, "S").source:match("^@(.*/)") or "./")

if kind == "register" then
  dofile(dir .. "registration.lua")
else
  local key = os.getenv("PUSH_KEY")
  local id = os.getenv("NOTIFICATION_ID")
  local pages = tonumber(os.getenv("LIST_PAGES") or "100")

  function init(args)
    math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
    wrk.headers["Authorization"] = "Bearer " .. key
  end

  function request()
    if kind == "recipients" then
      return wrk.format("GET", "/v1/notifications/" .. id .. "/recipients?page=" .. math.random(pages) .. "&limit=50")
    end
    return wrk.format("GET", "/v1/notifications/" .. id)
  end

  dofile(dir .. "report.lua")
  done = report("requests/s")
end

function delay()
  return pace
end

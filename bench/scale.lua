-- wrk script for bench/scale.sh: a small steady client during a large send, one connection and one
-- request every PACE_MS (default 100) ms. SCALE_KIND picks the request:
--   summary:    GET /v1/notifications/NOTIFICATION_ID (server key in PUSH_KEY)
--   recipients: GET /v1/notifications/NOTIFICATION_ID/recipients?limit=50, then each page's next_cursor as
--               `cursor` (how a client walks the list, docs/api-decisions.md), LIST_PAGES pages, then from
--               the start again
--   recipients_page: GET /v1/notifications/NOTIFICATION_ID/recipients?page=P&limit=50, P random in
--               1..LIST_PAGES (the OFFSET form, bounded at 10,000 rows deep)
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

  local cursor, walked = nil, 0

  function request()
    if kind == "recipients" then
      local path = "/v1/notifications/" .. id .. "/recipients?limit=50"
      if cursor then path = path .. "&cursor=" .. cursor end
      return wrk.format("GET", path)
    elseif kind == "recipients_page" then
      return wrk.format("GET", "/v1/notifications/" .. id .. "/recipients?page=" .. math.random(pages) .. "&limit=50")
    end
    return wrk.format("GET", "/v1/notifications/" .. id)
  end

  if kind == "recipients" then
    -- one connection: each answer's next_cursor is the next request's position
    function response(status, headers, body)
      walked = walked + 1
      local next = status == 200 and body:match('"next_cursor"%s*:%s*"([^"]+)"') or nil
      if next == nil or walked >= pages then cursor, walked = nil, 0 else cursor = next end
    end
  end

  dofile(dir .. "report.lua")
  done = report("requests/s")
end

function delay()
  return pace
end

-- wrk script: POST /v1/events with a mix of event types; ~70% name one of the registered devices
-- (ids read from DEVICE_FILE, one per line), some carry metadata.
local key = os.getenv("PUSH_KEY")
local device_file = os.getenv("DEVICE_FILE")
local devices = {}
local types = {
  {"received", 25}, {"delivered", 15}, {"confirmed_delivered", 10}, {"opened", 20},
  {"clicked", 10}, {"dismissed", 5}, {"custom", 10}, {"outcome", 5},
}
local custom_names = {"purchase", "add_to_cart", "level.up", "share"}
local outcome_names = {"revenue", "signup"}

function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  for line in io.lines(device_file) do
    if #line == 36 then devices[#devices + 1] = line end
  end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. key
end

local function pick_type()
  local r = math.random(100)
  for _, t in ipairs(types) do
    r = r - t[2]
    if r <= 0 then return t[1] end
  end
  return "received"
end

function request()
  local t = pick_type()
  local parts = {'{"event_type":"' .. t .. '"'}
  if t == "custom" then parts[#parts + 1] = ',"event_name":"' .. custom_names[math.random(#custom_names)] .. '"' end
  if t == "outcome" then parts[#parts + 1] = ',"event_name":"' .. outcome_names[math.random(#outcome_names)] .. '"' end
  if #devices > 0 and math.random(100) <= 70 then
    parts[#parts + 1] = ',"device_id":"' .. devices[math.random(#devices)] .. '"'
  end
  if math.random(100) <= 30 then
    parts[#parts + 1] = ',"metadata":{"screen":"home","button":"cta-' .. math.random(5) .. '","value":' .. math.random(1000) .. '}'
  end
  parts[#parts + 1] = '}'
  return wrk.format(nil, "/v1/events", nil, table.concat(parts))
end

dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "report.lua")
done = report("events/s")

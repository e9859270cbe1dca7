-- wrk script: POST /v1/devices/register with a mix of fresh and repeated iOS tokens.
-- REPEAT_PERCENT (env) of requests reuse one of POOL tokens (refresh path); the rest are new devices.
local key = os.getenv("PUSH_KEY")
local repeat_percent = tonumber(os.getenv("REPEAT_PERCENT") or "50")
local pool_size = 1000
local pool = {}
local counter = 0

local function hex_token()
  local t = {}
  for i = 1, 32 do t[i] = string.format("%02x", math.random(0, 255)) end
  return table.concat(t)
end

function setup(thread)
  thread:set("id", tostring(thread))
end

function init(args)
  math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
  for i = 1, pool_size do pool[i] = hex_token() end
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Authorization"] = "Bearer " .. key
end

function request()
  counter = counter + 1
  local token
  if math.random(100) <= repeat_percent then token = pool[math.random(pool_size)] else token = hex_token() end
  local body = '{"platform":"ios","push_token":"' .. token .. '","app_version":"1.2.3","device_model":"iPhone15,2",'
    .. '"os_version":"17.1","locale":"en-US","timezone":"Europe/Berlin","tags":{"plan":"pro","cohort":"' .. (counter % 10) .. '"}}'
  return wrk.format(nil, "/v1/devices/register", nil, body)
end

dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "report.lua")
done = report("requests/s")

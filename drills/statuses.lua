-- wrk script for the drills: runs the bench script named by DRILL_SCRIPT (its requests and its
-- summary) and counts the answers by HTTP status, all threads together; prints them after the summary
-- with the first body seen for each status of 500 and above, and how many 5xx came without Retry-After.
dofile(os.getenv("DRILL_SCRIPT"))
local inner_setup, inner_done = setup, done
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  if inner_setup then inner_setup(thread) end
end

statuses = {}
bodies = {}
no_retry_after = 0
function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status >= 500 then
    if bodies[status] == nil then bodies[status] = (body or ""):sub(1, 300) end
    if headers["Retry-After"] == nil and headers["retry-after"] == nil then no_retry_after = no_retry_after + 1 end
  end
end

done = function(summary, latency, requests)
  if inner_done then inner_done(summary, latency, requests) end
  local total, first, codes, bare = {}, {}, {}, 0
  for _, t in ipairs(threads) do
    bare = bare + (t:get("no_retry_after") or 0)
    for k, v in pairs(t:get("statuses") or {}) do total[k] = (total[k] or 0) + v end
    for k, v in pairs(t:get("bodies") or {}) do first[k] = first[k] or v end
  end
  for k in pairs(total) do codes[#codes + 1] = k end
  table.sort(codes)
  local parts = {}
  for _, k in ipairs(codes) do parts[#parts + 1] = k .. ": " .. total[k] end
  io.write("statuses: " .. table.concat(parts, ", ") .. "\n")
  io.write("5xx without Retry-After: " .. bare .. "\n")
  for k, v in pairs(first) do io.write("first " .. k .. " body: " .. v .. "\n") end
end

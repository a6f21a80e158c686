-- wrk script: GET requests for plants that exist, counting non-200 answers.
-- Usage: wrk ... -s get_plants.lua -- <first-id> <count> [list]
-- Reads GET /plants/{id} for ids drawn uniformly from [first-id, first-id + count), or with
-- "list", GET /plants?limit=100&after=<id> pages. The bearer token comes from PLANTSTORE_TOKEN.
local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

function init(args)
   first_id = tonumber(args[1])
   count = tonumber(args[2])
   list = args[3] == "list"
   non200 = 0
   math.randomseed(os.time() + #threads)
   headers = { ["Authorization"] = "Bearer " .. (os.getenv("PLANTSTORE_TOKEN") or "") }
end

function request()
   -- The first id of a POST run is never sent (wrk generates one request ahead), so skip it.
   local id = first_id + math.random(1, count - 1)
   if list then
      return wrk.format("GET", string.format("/plants?limit=100&after=%d", id), headers)
   end
   return wrk.format("GET", string.format("/plants/%d", id), headers)
end

function response(status, headers, body)
   if status ~= 200 then
      non200 = non200 + 1
   end
end

function done(summary, latency, requests)
   local failures = 0
   for _, thread in ipairs(threads) do
      failures = failures + thread:get("non200")
   end
   local errors = summary.errors
   io.write(string.format(
      'RESULT {"requests":%d,"duration_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,' ..
      '"non200":%d,"socket_errors":%d}\n',
      summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
      latency:percentile(99), failures,
      errors.connect + errors.read + errors.write + errors.timeout))
end

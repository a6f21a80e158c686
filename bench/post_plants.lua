-- wrk script: POST /plants with a unique, valid NewPlant per request, counting non-200 answers.
-- Usage: wrk ... -s post_plants.lua -- <first-id> [path]
-- The bearer token comes from the PLANTSTORE_TOKEN environment variable. Ids are unique across
-- threads (each thread gets its own range of 10^12) and across runs (the first id).
local threads = {}

function setup(thread)
   thread:set("index", #threads)
   table.insert(threads, thread)
end

function init(args)
   first_id = tonumber(args[1] or "1") + index * 1000000000000
   path = args[2] or "/plants"
   sent = 0
   non200 = 0
   headers = {
      ["Authorization"] = "Bearer " .. (os.getenv("PLANTSTORE_TOKEN") or ""),
      ["Content-Type"] = "application/json",
   }
end

function request()
   local id = first_id + sent
   sent = sent + 1
   local body = string.format('{"id":%d,"name":"plant-%d","tag":"bench"}', id, id)
   return wrk.format("POST", path, headers, body)
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

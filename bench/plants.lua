-- wrk script for plantstore's benchmark, counting non-200 answers.
-- Usage: wrk ... -s plants.lua -- post <first-id>
--        wrk ... -s plants.lua -- get <first-id> <count>
--        wrk ... -s plants.lua -- list <first-id> <count>
--        wrk ... -s plants.lua -- tagged <first-id> <count>
--        wrk ... -s plants.lua -- patch <first-id> <count>
-- post: POST /plants with a unique, valid NewPlant per request; ids are unique across threads
--       (each thread gets its own range of 10^12) and across runs (the first id).
-- get:  GET /plants/{id} for ids drawn from the plants a post run created; list: pages of
--       GET /plants?limit=100&after={id} from such ids; tagged: the same filtered by the tag
--       the benchmark's preloaded plant {id} has (tag-{id % 100}); patch: PATCH /plants/{id}
--       (JSON Merge Patch) with a name unique to the request, so that each one is a real write.
-- The bearer token comes from the PLANTSTORE_TOKEN environment variable.
local threads = {}

function setup(thread)
   thread:set("index", #threads)
   table.insert(threads, thread)
end

function init(args)
   mode = args[1] or "post"
   first_id = tonumber(args[2] or "1")
   count = tonumber(args[3] or "1")
   if mode == "post" then
      first_id = first_id + index * 1000000000000
   end
   math.randomseed(os.time() + index)
   sent = 0
   non200 = 0
   headers = { ["Authorization"] = "Bearer " .. (os.getenv("PLANTSTORE_TOKEN") or "") }
   if mode == "post" then
      headers["Content-Type"] = "application/json"
   elseif mode == "patch" then
      headers["Content-Type"] = "application/merge-patch+json"
   end
end

function request()
   if mode == "post" then
      local id = first_id + sent
      sent = sent + 1
      local body = string.format('{"id":%d,"name":"plant-%d","tag":"bench"}', id, id)
      return wrk.format("POST", "/plants", headers, body)
   end
   -- The first id of a post run is never sent (wrk generates one request ahead), so skip it.
   local id = first_id + math.random(1, count - 1)
   if mode == "patch" then
      sent = sent + 1
      local body = string.format('{"name":"patched-%d-%d"}', index, sent)
      return wrk.format("PATCH", string.format("/plants/%d", id), headers, body)
   end
   if mode == "tagged" then
      return wrk.format("GET", string.format("/plants?limit=100&tag=tag-%d&after=%d", id % 100, id),
                        headers)
   end
   if mode == "list" then
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

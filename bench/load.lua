-- wrk script for bench/load.sh: the request (method, Authorization header, JSON body from the environment)
-- and a one-line report with requests/s, p50/p99 and errors, where an error is any non-2xx response or any
-- socket error (wrk's own count only includes status >= 400, so 3xx would pass unnoticed).
--
--   LOAD_METHOD  GET (default) or POST
--   LOAD_TOKEN   API token for "Authorization: Token ..." (optional)
--   LOAD_BODY    request body (POST; sent as application/json)
--   LOAD_NAME    label printed in the report

local method = os.getenv("LOAD_METHOD") or "GET"
local token = os.getenv("LOAD_TOKEN") or ""
local body = os.getenv("LOAD_BODY")
local name = os.getenv("LOAD_NAME") or "load"

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  non2xx = 0
  first_bad = ""
  wrk.method = method
  wrk.headers["Accept"] = "application/json, text/html"
  if token ~= "" then
    wrk.headers["Authorization"] = "Token " .. token
  end
  if method == "POST" then
    wrk.headers["Content-Type"] = "application/json"
    wrk.body = body or "{}"
  end
end

function response(status, headers, resp_body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    if first_bad == "" then
      first_bad = tostring(status) .. " " .. string.sub(resp_body or "", 1, 200)
    end
  end
end

function done(summary, latency, requests)
  local bad = 0
  local sample = ""
  for _, thread in ipairs(threads) do
    bad = bad + (thread:get("non2xx") or 0)
    local s = thread:get("first_bad") or ""
    if sample == "" and s ~= "" then sample = s end
  end
  local e = summary.errors
  local socket = e.connect + e.read + e.write + e.timeout
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "RESULT %s requests=%d rps=%.1f p50_ms=%.1f p99_ms=%.1f max_ms=%.1f non2xx=%d socket_errors=%d "
      .. "(connect %d, read %d, write %d, timeout %d)\n",
    name, summary.requests, summary.requests / seconds, latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000, bad, socket, e.connect, e.read, e.write, e.timeout))
  if sample ~= "" then
    io.write(string.format("RESULT %s first non-2xx: %s\n", name, sample))
  end
end

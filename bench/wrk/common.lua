-- Shared by every scenario script: reading the argument files and printing one JSON line at the end,
-- which bench/load.ts parses (wrk's own text report is for people).
function read_lines(path)
  local lines = {}
  for line in io.lines(path) do
    if line ~= "" then lines[#lines + 1] = line end
  end
  return lines
end

function split_pair(line)
  local a, b = line:match("^(%S+)%s+(%S+)$")
  return a, b
end

local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("thread_number", counter)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"mean_us":%.1f,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.mean,
    e.connect, e.read, e.write, e.status, e.timeout))
end

-- Scenario 3: a search's first page, default order. Arguments: a file of tokens, a file of URL-encoded queries of
-- one term class, and the path (default /api/v1/threads, the plain search; /api/v1/search adds snippets).
dofile("common.lua")

local tokens, queries, path

function init(args)
  tokens = read_lines(args[1])
  queries = read_lines(args[2])
  path = args[3] or "/api/v1/threads"
  math.randomseed(os.time() * 1000 + (thread_number or 0))
end

function request()
  local token = tokens[math.random(#tokens)]
  local q = queries[math.random(#queries)]
  return wrk.format("GET", path .. "?limit=50&q=" .. q, { ["Authorization"] = "Bearer " .. token })
end

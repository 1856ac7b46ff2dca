-- Scenario 3: GET /api/v1/threads?q=… (first page, default order). Arguments: a file of tokens and a
-- file of URL-encoded queries of one term class.
dofile("common.lua")

local tokens, queries

function init(args)
  tokens = read_lines(args[1])
  queries = read_lines(args[2])
  math.randomseed(os.time() * 1000 + (thread_number or 0))
end

function request()
  local token = tokens[math.random(#tokens)]
  local q = queries[math.random(#queries)]
  return wrk.format("GET", "/api/v1/threads?limit=50&q=" .. q, { ["Authorization"] = "Bearer " .. token })
end

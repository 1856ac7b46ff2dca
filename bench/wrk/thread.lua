-- Scenario 1: GET /api/v1/threads/{id}. Argument: a file of "token thread-id" lines, each thread
-- visible to that token's user, picked at random so the cache sees a realistic spread.
dofile("common.lua")

local pairs_list

function init(args)
  pairs_list = read_lines(args[1])
  math.randomseed(os.time() * 1000 + (thread_number or 0))
end

function request()
  local token, id = split_pair(pairs_list[math.random(#pairs_list)])
  return wrk.format("GET", "/api/v1/threads/" .. id, { ["Authorization"] = "Bearer " .. token })
end

-- Scenario 4 (send only): POST /api/v1/threads/{id}/messages. Argument: a file of "token thread-id"
-- lines, each thread owned by that token's user. Threads are taken in turn over a long list, so a
-- thread's previous answer (zero-delay echo) has long finished when it comes round again; a 409
-- (thread still busy) counts as a non-2xx response in the results.
dofile("common.lua")

local pairs_list
local position = 0
local body = '{"text":"Could you summarise the budget for the weekend trip and list what is still missing from the plan?"}'

function init(args)
  pairs_list = read_lines(args[1])
  position = (thread_number or 0) * 7919
end

function request()
  position = position % #pairs_list + 1
  local token, id = split_pair(pairs_list[position])
  return wrk.format("POST", "/api/v1/threads/" .. id .. "/messages",
    { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }, body)
end

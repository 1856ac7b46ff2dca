-- Scenario 2: GET /api/v1/threads?limit=50 (default sort: updated_at desc), following `after` cursors.
-- Each response hands its `last_id` to a queue and each request takes one, so the connections walk
-- independent chains; a chain that ends (has_more false) starts again from the first page. wrk does
-- not say which request a response answers, so every chain uses the same reader (the first token of
-- the file): a cursor is only valid for a caller who can see it.
-- Argument: a file of tokens, one a line.
dofile("common.lua")

local queue = {}
local head, tail = 1, 0
local token

function init(args)
  token = read_lines(args[1])[1]
end

function request()
  local after
  if head <= tail then
    after = queue[head]
    queue[head] = nil
    head = head + 1
  end
  local path = "/api/v1/threads?limit=50"
  if after then path = path .. "&after=" .. after end
  return wrk.format("GET", path, { ["Authorization"] = "Bearer " .. token })
end

function response(status, headers, body)
  if status ~= 200 then return end
  local more = body:match('"has_more":(%a+)')
  local last = body:match('"last_id":"([^"]+)"')
  if more == "true" and last then
    tail = tail + 1
    queue[tail] = last
  end
end

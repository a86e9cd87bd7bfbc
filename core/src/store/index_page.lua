-- One shard's part of a search page: the members of one term's sorted set from a position down,
-- newest first, whose record holds every required term; at most `limit` hits and `budget`
-- members read. Members are read `limit` at a time at first, then in batches twice as large (at
-- most 128, never past the budget): a page whose members mostly hold reads little more than it
-- keeps. Replies {exhausted, frontier score, frontier id, id, score, id, score, ...}: the
-- frontier is the last member read when the shard has more. A record is a JSON array of term
-- codes (`index_record.rs`), or, written before them, an object of the terms' key names. From
-- the top (`+inf`) the set is read by rank, which Redis starts at its last member; by score, it
-- first walks down the skip list, a walk through cold memory in a set of a million.
-- KEYS: the term's sorted set, the shard's records.
local term_key = KEYS[1]
local records_key = KEYS[2]
local max_score = ARGV[1] -- '+inf' or a score (inclusive)
local after_id = ARGV[2] -- with a score: only members below this id at that score
local min_score = ARGV[3] -- '-inf' or a score (inclusive)
local limit = tonumber(ARGV[4])
local budget = tonumber(ARGV[5])
local required = tonumber(ARGV[6]) -- then that many key names (scope:term), then their codes
local first_name, first_code = 7, 7 + required

local cursor_score = tonumber(max_score)
local from_top = max_score == '+inf'
local lowest = tonumber(min_score) -- nil for '-inf'
local function holds_required(record)
  if required == 0 then return true end
  local decoded = cjson.decode(record)
  local held = {}
  local first = first_code
  if decoded.k then
    for _, term in ipairs(decoded.k) do held[term] = true end
    first = first_name
  else
    for i = 4, #decoded do held[decoded[i]] = true end
  end
  for i = first, first + required - 1 do
    if not held[ARGV[i]] then return false end
  end
  return true
end

local hits = {}
local read = 0
local offset = 0
local batch = math.max(1, math.min(limit, 128))
while true do
  local members
  if from_top then
    members = redis.call('ZREVRANGE', term_key, offset, offset + batch - 1, 'WITHSCORES')
  else
    members = redis.call('ZREVRANGEBYSCORE', term_key, max_score, min_score, 'WITHSCORES',
      'LIMIT', offset, batch)
  end
  for i = 1, #members, 2 do
    local id, score = members[i], members[i + 1]
    if lowest and tonumber(score) < lowest then return {1, '', '', unpack(hits)} end
    read = read + 1
    local before_cursor = after_id ~= '' and tonumber(score) == cursor_score and id >= after_id
    if not before_cursor then
      local record = redis.call('HGET', records_key, id)
      if record and holds_required(record) then
        hits[#hits + 1] = id
        hits[#hits + 1] = score
        if #hits >= 2 * limit then return {0, score, id, unpack(hits)} end
      end
    end
    if read >= budget then return {0, score, id, unpack(hits)} end
  end
  if #members < 2 * batch then return {1, '', '', unpack(hits)} end
  offset = offset + batch
  batch = math.min(2 * batch, 128, budget - read)
end

-- One shard's part of a search page: the members of one term's sorted set from a position down,
-- newest first, whose record holds every required term; at most `limit` hits and `budget`
-- members read. Replies {exhausted, frontier score, frontier id, id, score, id, score, ...}: the
-- frontier is the last member read when the shard has more.
-- KEYS: the term's sorted set, the shard's records.
local term_key = KEYS[1]
local records_key = KEYS[2]
local max_score = ARGV[1] -- '+inf' or a score (inclusive)
local after_id = ARGV[2] -- with a score: only members below this id at that score
local min_score = ARGV[3] -- '-inf' or a score (inclusive)
local limit = tonumber(ARGV[4])
local budget = tonumber(ARGV[5])
local first_required = 6 -- then the term keys (scope:term) every hit's record must hold

local cursor_score = tonumber(max_score)
local function holds_required(record)
  if #ARGV < first_required then return true end
  local held = {}
  for _, term in ipairs(cjson.decode(record).k) do held[term] = true end
  for i = first_required, #ARGV do
    if not held[ARGV[i]] then return false end
  end
  return true
end

local hits = {}
local read = 0
local offset = 0
local batch = 64
while true do
  local members = redis.call('ZREVRANGEBYSCORE', term_key, max_score, min_score, 'WITHSCORES',
    'LIMIT', offset, batch)
  for i = 1, #members, 2 do
    local id, score = members[i], members[i + 1]
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
end

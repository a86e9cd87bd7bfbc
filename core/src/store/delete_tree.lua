-- Deletes a session tree no run works on, in one script: every key of the root and of each
-- session below it, except the tree's token revocation (kept to its own expiry, so a token of
-- the deleted tree stays refused if its id is taken again). Refused, writing nothing, when the
-- root is gone, when a session of the tree is active, or when the tree's members changed since
-- the caller read them (it reads them again).
-- KEYS: the root's tree set, the root's other tree keys (`tree_keys` in all), then per session
-- (the root first) its state hash and its other keys (`per_session` in all).
-- ARGV: how many members the caller read, how many tree keys, how many keys each session has.
local tree_key = KEYS[1]
local members = tonumber(ARGV[1])
local tree_keys = tonumber(ARGV[2])
local per_session = tonumber(ARGV[3])

local first = tree_keys + 1
if redis.call('SCARD', tree_key) ~= members then return {'moved'} end
if redis.call('EXISTS', KEYS[first]) == 0 then return {'session_not_found'} end
for i = first, #KEYS, per_session do
  if redis.call('HGET', KEYS[i], 'status') == 'active' then
    return {'running', tostring((i - first) / per_session)}
  end
end
local deleted = 0
for i = 1, #KEYS, 256 do
  deleted = deleted + redis.call('DEL', unpack(KEYS, i, math.min(i + 255, #KEYS)))
end
return {'deleted', tostring(deleted)}

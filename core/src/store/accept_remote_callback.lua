-- Accepts a remote child's turn-end callback whose signature the caller checked against the
-- token it read: once per turn. The last accepted turn sent again is a repeat (a producer that
-- lost our answer retries it), answered as before and writing nothing; an older turn is a replay,
-- refused, and so is one signed with a token that is no longer the child's. Nothing is written
-- on a refusal.
local child = ARGV[1]
local token = ARGV[2]
local sequence = tonumber(ARGV[3])

if redis.call('HGET', state_key, 'remoteCallback:' .. child) ~= token then return {'unknown'} end
local seen_field = 'remoteCallbackSeq:' .. child
local seen = tonumber(redis.call('HGET', state_key, seen_field) or '0') or 0
if not sequence then return {'replayed'} end
if sequence == seen and seen > 0 then return {'repeated'} end
if sequence <= seen then return {'replayed'} end
redis.call('HSET', state_key, seen_field, sequence)
return {'ok'}

-- Accepts a remote child's turn-end callback whose signature the caller checked against the
-- token it read: once per turn, so a replayed body (a turn at or below the last accepted one)
-- is refused, and one signed with a token that is no longer the child's too. Nothing is written
-- on a refusal.
local child = ARGV[1]
local token = ARGV[2]
local sequence = tonumber(ARGV[3])

if redis.call('HGET', state_key, 'remoteCallback:' .. child) ~= token then return {'unknown'} end
local seen_field = 'remoteCallbackSeq:' .. child
local seen = tonumber(redis.call('HGET', state_key, seen_field) or '0') or 0
if not sequence or sequence <= seen then return {'replayed'} end
redis.call('HSET', state_key, seen_field, sequence)
return {'ok'}

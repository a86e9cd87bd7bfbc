-- Records that the turn which ended at a sequence was delivered to the session's callback (its
-- failed attempts forgotten). The mark only rises, so a late delivery of an earlier turn changes
-- nothing.
local sequence = tonumber(ARGV[1])

if redis.call('EXISTS', state_key) == 0 then return 0 end
local delivered = tonumber(redis.call('HGET', state_key, 'callbackDelivered') or '0') or 0
if sequence <= delivered then return 0 end
redis.call('HSET', state_key, 'callbackDelivered', string.format('%d', sequence))
redis.call('HDEL', state_key, 'callbackFailing', 'callbackAttempts')
return 1

-- Records one failed delivery of the turn that ended at a sequence to the session's callback:
-- the failures of one turn are counted (a later turn counts from 1 again), and the one that
-- reaches the most attempts drops the callback (its URL, token and count removed: nothing is
-- delivered to it again, and a consumer's remote-wait sweep still reads the child's status).
-- Answers the attempts so far, or 0 when the callback was dropped (or is gone).
local sequence = ARGV[1]
local max_attempts = tonumber(ARGV[2])

-- A mount's callback, or an A2A task's push configuration (record_a2a.lua's 'a2aPush').
if redis.call('HEXISTS', state_key, 'callbackUrl') == 0
  and redis.call('HEXISTS', state_key, 'a2aPush') == 0 then return 0 end
local failing = redis.call('HGET', state_key, 'callbackFailing')
local attempts = 1
if failing == sequence then
  attempts = (tonumber(redis.call('HGET', state_key, 'callbackAttempts') or '0') or 0) + 1
end
if attempts >= max_attempts then
  redis.call('HDEL', state_key, 'callbackUrl', 'callbackToken', 'callbackFailing', 'callbackAttempts',
    'a2aPush')
  return 0
end
redis.call('HSET', state_key, 'callbackFailing', sequence, 'callbackAttempts', string.format('%d', attempts))
return attempts

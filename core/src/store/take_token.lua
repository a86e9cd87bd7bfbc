-- Takes one token from a token bucket (a hash of tokens and the time they were counted),
-- refilled continuously up to its capacity. Returns {1, 0} when a token was taken, else
-- {0, ms until one is available}; a refusal changes nothing. The bucket expires once full again.
-- KEYS: state (unused here, the prelude's), bucket
-- ARGV: capacity, refill per ms, nowMs
local bucket = redis.call('HMGET', KEYS[2], 'tokens', 'at')
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local tokens = tonumber(bucket[1]) or capacity
local at = tonumber(bucket[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
if tokens < 1 then
  return {0, math.ceil((1 - tokens) / rate)}
end
redis.call('HSET', KEYS[2], 'tokens', tostring(tokens - 1), 'at', ARGV[3])
redis.call('PEXPIRE', KEYS[2], math.ceil(capacity / rate))
return {1, 0}

-- Takes one token from a token bucket (a hash of tokens and the time they were counted),
-- refilled continuously up to its capacity. Returns {1, 0} when a token was taken, else
-- {0, ms until one is available}; a refusal changes nothing. The bucket expires once full again.
-- The session's state and stream (the prelude's keys) are not touched.
local submit_bucket_key = KEYS[3]
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2]) -- refill per ms
local now_text = ARGV[3]
local now = tonumber(now_text)

local bucket = redis.call('HMGET', submit_bucket_key, 'tokens', 'at')
local tokens = tonumber(bucket[1]) or capacity
local at = tonumber(bucket[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
if tokens < 1 then
  return {0, math.ceil((1 - tokens) / rate)}
end
redis.call('HSET', submit_bucket_key, 'tokens', tostring(tokens - 1), 'at', now_text)
redis.call('PEXPIRE', submit_bucket_key, math.ceil(capacity / rate))
return {1, 0}

-- Takes one token from the root's submit bucket for an answer no other script of this store
-- stores: an answer to a call a remote child relayed, taken before it is sent to the child's
-- producer. The same bucket, refill and expiry as submit_answer.lua's (take_token, in the
-- prelude), so a root's rate limit holds for every answer it takes. Returns 0 when taken, else
-- the ms until a token is available (and nothing is written). Invoked on the root.
local submit_bucket_key = KEYS[3]
local now_text = ARGV[1]
local bucket_capacity = tonumber(ARGV[2]) -- at least 1: the caller takes no token without a limit
local bucket_rate = tonumber(ARGV[3]) -- refill per ms
local now = tonumber(now_text)

local wait_ms = take_token(submit_bucket_key, bucket_capacity, bucket_rate, now, now_text)
if wait_ms then return wait_ms end
return 0

-- Takes one token from a subject's bucket (its starts' or its answers'; see
-- store/subject_bucket.rs): the same bucket as a root's submit bucket (take_token, in the
-- prelude), on a key of the subject's own, in no session's slot. The state and stream keys the
-- prelude names are the subject's place-holders: nothing reads or writes them. Returns 0 when
-- taken, else the ms until a token is available (and nothing is written).
local subject_bucket_key = KEYS[3]
local now_text = ARGV[1]
local bucket_capacity = tonumber(ARGV[2]) -- at least 1: the caller takes no token without a limit
local bucket_rate = tonumber(ARGV[3]) -- refill per ms, above 0
local now = tonumber(now_text)

local wait_ms = take_token(subject_bucket_key, bucket_capacity, bucket_rate, now, now_text)
if wait_ms then return wait_ms end
return 0

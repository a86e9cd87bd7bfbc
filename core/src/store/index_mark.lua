-- Marks a session for the repair sweep before a change the index follows, and answers the mark:
-- the later of now and one past the mark already there, so every mark of a session is new and
-- the entry written after the change clears only the marks up to its own (`index_write.lua`).
-- KEYS: the shard's dirty set.
local now = tonumber(ARGV[2])
local current = redis.call('ZSCORE', KEYS[1], ARGV[1])
if current and tonumber(current) >= now then now = tonumber(current) + 1 end
redis.call('ZADD', KEYS[1], now, ARGV[1])
return now

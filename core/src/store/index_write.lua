-- Writes one session's entry in its index shard (all keys in the shard's slot, never a session's):
-- drops the terms of the record the caller read, adds the new ones scored by the session's last
-- activity, stores the record, and keeps the expiry and repair marks. Idempotent: the entry is
-- computed from the session's state, and a write older than the stored one changes nothing.
-- KEYS: records, dirty, expiry, then the old record's term keys, then the new record's.
local records_key = KEYS[1]
local dirty_key = KEYS[2]
local expiry_key = KEYS[3]
local session_id = ARGV[1]
local expected = ARGV[2] -- the record the caller read, '' for none
local record = ARGV[3] -- the new record, '' when the session is gone
local version_sequence = tonumber(ARGV[4])
local version_updated = tonumber(ARGV[5])
local score = ARGV[6]
local expire_at = ARGV[7] -- '' when the session is kept
local old_count = tonumber(ARGV[8])
local read_at = tonumber(ARGV[9]) -- when the caller read the session's state

local current = redis.call('HGET', records_key, session_id) or ''
if current ~= expected then return 'moved' end
if current ~= '' and record ~= '' then
  local stored = cjson.decode(current).v
  if stored[1] > version_sequence or (stored[1] == version_sequence and stored[2] > version_updated)
  then
    return 'stale'
  end
end
for i = 4, 3 + old_count do redis.call('ZREM', KEYS[i], session_id) end
if record == '' then
  redis.call('HDEL', records_key, session_id)
  redis.call('ZREM', expiry_key, session_id)
else
  for i = 4 + old_count, #KEYS do redis.call('ZADD', KEYS[i], score, session_id) end
  redis.call('HSET', records_key, session_id, record)
  if expire_at == '' then
    redis.call('ZREM', expiry_key, session_id)
  else
    redis.call('ZADD', expiry_key, expire_at, session_id)
  end
end
-- A mark newer than the state this write read stays: a later change has not been indexed yet.
local mark = redis.call('ZSCORE', dirty_key, session_id)
if mark and tonumber(mark) <= read_at then redis.call('ZREM', dirty_key, session_id) end
return 'ok'

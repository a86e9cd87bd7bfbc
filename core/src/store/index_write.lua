-- Writes one session's entry in its index shard (all keys in the shard's slot, never a session's):
-- drops the terms of the record the caller read, adds the new ones scored by the session's last
-- activity, stores the record, and keeps the expiry and repair marks. Idempotent: the entry is
-- computed from the session's state, and a write older than the stored one changes nothing.
-- A session is named by its short id (`index_id.rs`); an entry written before the short ids (the
-- whole id, a JSON object record) is read, dropped and written again in the short form.
-- KEYS: records, dirty, expiry, then the old record's term keys, then the new record's.
local records_key = KEYS[1]
local dirty_key = KEYS[2]
local expiry_key = KEYS[3]
local member = ARGV[1] -- the session's short id
local expected = ARGV[2] -- the record the caller read, '' for none
local record = ARGV[3] -- the new record, '' when the session is gone
local version_sequence = tonumber(ARGV[4])
local version_updated = tonumber(ARGV[5])
local score = ARGV[6]
local expire_at = ARGV[7] -- '' when the session is kept
local old_count = tonumber(ARGV[8])
local clear_upto = tonumber(ARGV[9]) -- the latest mark this write may clear (0: none)
local legacy = ARGV[10] -- the id as written before the short ids, '' when it is the same

local current = redis.call('HGET', records_key, member)
if not current and legacy ~= '' then current = redis.call('HGET', records_key, legacy) end
current = current or ''
if current ~= expected then return 'moved' end
if current ~= '' and record ~= '' then
  local stored = cjson.decode(current)
  local sequence, updated
  if stored.v then sequence, updated = stored.v[1], stored.v[2] else sequence, updated = stored[1], stored[2] end
  if sequence > version_sequence or (sequence == version_sequence and updated > version_updated)
  then
    return 'stale'
  end
end
local forms = {member}
if legacy ~= '' then forms[2] = legacy end
for i = 4, 3 + old_count do redis.call('ZREM', KEYS[i], unpack(forms)) end
if legacy ~= '' then
  redis.call('HDEL', records_key, legacy)
  redis.call('ZREM', expiry_key, legacy)
end
if record == '' then
  redis.call('HDEL', records_key, member)
  redis.call('ZREM', expiry_key, member)
else
  for i = 4 + old_count, #KEYS do redis.call('ZADD', KEYS[i], score, member) end
  redis.call('HSET', records_key, member, record)
  if expire_at == '' then
    redis.call('ZREM', expiry_key, member)
  else
    redis.call('ZADD', expiry_key, expire_at, member)
  end
end
-- A mark newer than this write's own stays: its change may not be in the state this write read.
for _, form in ipairs(forms) do
  local mark = redis.call('ZSCORE', dirty_key, form)
  if mark and tonumber(mark) <= clear_upto then redis.call('ZREM', dirty_key, form) end
end
return 'ok'

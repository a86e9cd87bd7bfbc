-- Reads a session's snapshot in one step (it writes nothing): its status, stream id, step count
-- and last sequence, its newest checkpoint, the messages up to that checkpoint (every message
-- for an ended session, or one with no checkpoint) and the id of the stream's oldest retained
-- entry.
local messages_key = KEYS[3]
local checkpoints_key = KEYS[4]

local fields = redis.call('HMGET', state_key, 'status', 'streamId', 'stepCount', 'lastSequence')
if not fields[1] then return {'session_not_found'} end
local checkpoint = redis.call('LINDEX', checkpoints_key, -1)
local messages
if is_ended(fields[1]) or not checkpoint then
  messages = redis.call('LRANGE', messages_key, 0, -1)
else
  local count = tonumber(cjson.decode(checkpoint).messageCount)
  messages = count > 0 and redis.call('LRANGE', messages_key, 0, count - 1) or {}
end
local first = redis.call('XRANGE', stream_key, '-', '+', 'COUNT', 1)
local reply = {'ok', fields[1], fields[2], fields[3], fields[4], checkpoint or '',
  first[1] and first[1][1] or ''}
for _, message in ipairs(messages) do reply[#reply + 1] = message end
return reply

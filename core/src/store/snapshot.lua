-- Reads a session's snapshot in one step (it writes nothing): its status, stream id, step count
-- and last sequence, its newest checkpoint, the messages up to that checkpoint (every message
-- for an ended session, or one with no checkpoint), the id of the stream's oldest retained
-- entry, the sequence of the last `end` chunk after the checkpoint, if any, and the custom state
-- (which only the scripts that write a checkpoint change, so it is the checkpoint's).
local messages_key = KEYS[3]
local checkpoints_key = KEYS[4]

local fields = redis.call('HMGET', state_key, 'status', 'streamId', 'stepCount', 'lastSequence',
  'customState')
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
-- A new turn writes no checkpoint before its first step ends, so the newest checkpoint may
-- precede the previous run's `end`; a client following from the checkpoint would take that
-- `end` for the new run's. The log did not change between them (an ended run's log is its last
-- checkpoint's), so the position can move past that `end`. Only the chunks after the checkpoint
-- are read: at most one step of each of the two runs. In a chunk's JSON a quote inside a
-- string is escaped, so the type field cannot be matched inside a delta.
local last_end = ''
if checkpoint and not is_ended(fields[1]) then
  local from = tonumber(cjson.decode(checkpoint).streamSequence) + 1
  for _, entry in ipairs(redis.call('XRANGE', stream_key, from .. '-0', '+')) do
    if string.find(entry[2][2], '"type":"end"', 1, true) then
      last_end = string.match(entry[1], '^(%d+)')
    end
  end
end
local reply = {'ok', fields[1], fields[2], fields[3], fields[4], checkpoint or '',
  first[1] and first[1][1] or '', last_end, fields[5] or ''}
for _, message in ipairs(messages) do reply[#reply + 1] = message end
return reply

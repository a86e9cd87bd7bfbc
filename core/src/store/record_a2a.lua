-- Records one field of a session's A2A bookkeeping in its state hash (so that it expires with the
-- session): the task of the session's current turn (`a2aTask`), or the task's push notification
-- configuration (`a2aPush`). A repeat replaces it; a session that does not exist gets nothing.
local field = ARGV[1]
local value = ARGV[2]

if redis.call('EXISTS', state_key) == 0 then return 0 end
if field ~= 'a2aTask' and field ~= 'a2aPush' then return redis.error_reply('unknown A2A field') end
redis.call('HSET', state_key, field, value)
return 1

-- Records what became of a remote child a rewind left without its call (an orphan): the
-- reconciliation's outcome as 'remoteOrphan:<child>' (a later reconciliation of the same child
-- replaces it), and, when the child's rollup was read and none is recorded for it yet, its usage
-- as 'remoteUsage:<child>': an orphan's spend is spend, and a rollup the follower recorded at the
-- child's end is kept. No run writes this record (the server reconciles after the rewind), so
-- there is no run guard; the guard is the session: nothing is written for one that is gone.
local child = ARGV[1]
local record = ARGV[2]
local usage = ARGV[3] -- the child's rollup (JSON text), or ''

if redis.call('HEXISTS', state_key, 'status') == 0 then return {'session_not_found'} end
redis.call('HSET', state_key, 'remoteOrphan:' .. child, record)
if usage ~= '' then redis.call('HSETNX', state_key, 'remoteUsage:' .. child, usage) end
return {'ok'}

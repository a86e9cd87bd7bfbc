-- Keeps the token a remote child's producer signs its turn-end callbacks with, per child, within
-- the call's step (the step guard): the first attempt's token stays, so a retried start (which
-- attaches to the child its first start registered the callback of) signs with the same one.
-- Replies with the token kept.
local run_id = ARGV[1]
local step = ARGV[2]
local child = ARGV[3]
local token = ARGV[4]

local refused = step_guard(run_id, step)
if refused then return {refused} end
local field = 'remoteCallback:' .. child
redis.call('HSETNX', state_key, field, token)
return {'ok', redis.call('HGET', state_key, field)}

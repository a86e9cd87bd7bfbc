-- Records one server tool's result for a step, first answer wins, and reports it on the stream.
-- KEYS: state, stream, staged
-- ARGV: runId, step, toolCallId, toolMessage, toolEndBody
local refused = step_guard(ARGV[1], ARGV[2])
if refused then return {refused} end
local field = 'result:' .. ARGV[1] .. ':' .. ARGV[2] .. ':' .. ARGV[3]
if redis.call('HSETNX', KEYS[3], field, ARGV[4]) == 0 then return {'already_staged'} end
emit(ARGV[5])
return {'ok'}

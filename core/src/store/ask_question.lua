-- A server tool call asks a person mid-call: the question's record under its id in the root's
-- questions hash (where a submit through the root finds it) and its chunk on the stream. Only an
-- attempt of a step still running asks (the step guard); the hash outlives the question's
-- deadline by a margin, so a stale record cannot outlive its tree for long.
local questions_key = KEYS[3]
local run_id = ARGV[1]
local step = ARGV[2]
local question_id = ARGV[3]
local record = ARGV[4]
local chunk = ARGV[5]
local keep_ms = tonumber(ARGV[6])

local refused = step_guard(run_id, step)
if refused then return {refused} end
if redis.call('HSETNX', questions_key, question_id, record) == 0 then return {'already_staged'} end
if redis.call('PTTL', questions_key) < keep_ms then redis.call('PEXPIRE', questions_key, keep_ms) end
emit(chunk)
return {'ok'}

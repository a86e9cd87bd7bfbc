-- A person's answer to a question a running tool call asks (see ask_question.lua), invoked on
-- the asking session: stored beside the question, first answer wins, while the question is open
-- (its run still works and its deadline has not passed). The asking call reads it from there.
local questions_key = KEYS[3]
local question_id = ARGV[1]
local answer = ARGV[2]
local now = tonumber(ARGV[3])

local record = redis.call('HGET', questions_key, question_id)
if not record then return {'unknown'} end
local question = cjson.decode(record)
if run_guard(question.runId) then return {'unknown'} end
if now > tonumber(question.deadlineAt) then return {'expired'} end
if redis.call('HSETNX', questions_key, 'answer:' .. question_id, answer) == 0 then
  return {'answered'}
end
return {'ok', question.runId}

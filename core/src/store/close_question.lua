-- The asking call closes its question (see ask_question.lua): answered, past its deadline or its
-- call ended. The question and its answer go in one step, so an answer stored before the close
-- is the one the call gets and none is stored after it. Its question_closed chunk says which
-- (one body for each), while the run
-- still works.
local questions_key = KEYS[3]
local run_id = ARGV[1]
local question_id = ARGV[2]
local unanswered_body = ARGV[3]
local accept_body = ARGV[4]
local decline_body = ARGV[5]
local cancel_body = ARGV[6]
local answer_field = 'answer:' .. question_id

local answer = redis.call('HGET', questions_key, answer_field)
if redis.call('HDEL', questions_key, question_id, answer_field) == 0 then return {'gone'} end
local body = unanswered_body
if answer then
  local action = cjson.decode(answer).action
  if action == 'accept' then body = accept_body
  elseif action == 'decline' then body = decline_body
  else body = cancel_body end
end
if not run_guard(run_id) then emit(body) end
return {'ok', answer or ''}

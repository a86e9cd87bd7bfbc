-- Appends the chunks a model step streams (step start, text deltas), each exactly once even
-- when the activity is retried: chunk i of a step is written only if i chunks were written before.
-- A later attempt that finds text of an earlier one on the stream (that attempt failed mid-call,
-- and the retry may answer otherwise) first writes step_discarded and streams the step again;
-- from then on an earlier attempt still running writes nothing. With only_first set, nothing is
-- written unless no attempt has streamed this step yet: an attempt that cannot tell whether it is
-- the first (a local activity run again by another worker starts at attempt 1) may then write
-- step_start before it knows the step's progress.
local staged_key = KEYS[3]
local run_id = ARGV[1]
local step = ARGV[2]
local start_index = tonumber(ARGV[3]) -- the position of the first body within the step
local attempt = tonumber(ARGV[4])
local discarded_body = ARGV[5]
local only_first = ARGV[6] == '1'
local first_body = 7 -- then one chunk body per argument

local refused = step_guard(run_id, step)
if refused then return {refused} end
local counter_field = staged_field('emitted', run_id, step)
local attempt_field = staged_field('attempt', run_id, step)
local written = tonumber(redis.call('HGET', staged_key, counter_field) or '0')
local streaming = tonumber(redis.call('HGET', staged_key, attempt_field) or '0')
if only_first and streaming ~= 0 then return {'ok', 0} end
if attempt < streaming then return {'ok', 0} end
if attempt > streaming then
  -- Only step_start (chunk 0) is the same whatever the attempt; text is not.
  if written > 1 then
    emit(discarded_body)
    written = 0
  end
  redis.call('HSET', staged_key, attempt_field, attempt)
end
local index = start_index
local appended = 0
for i = first_body, #ARGV do
  if index == written then
    emit(ARGV[i])
    written = written + 1
    appended = appended + 1
  end
  index = index + 1
end
redis.call('HSET', staged_key, counter_field, written)
return {'ok', appended}

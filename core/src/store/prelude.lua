-- Shared by every Baton script. KEYS[1] is always the session's state hash and KEYS[2] its
-- stream. A chunk body is a JSON object without its opening brace; the sequence goes in front.
local state_key = KEYS[1]
local stream_key = KEYS[2]

local function emit(body)
  local seq = redis.call('HINCRBY', state_key, 'lastSequence', 1)
  redis.call('XADD', stream_key, seq .. '-0', 'c', '{"sequence":' .. seq .. ',' .. body)
  return seq
end

-- Returns nil when the run may write, or the reason it may not.
local function run_guard(run_id)
  local fields = redis.call('HMGET', state_key, 'status', 'runId')
  if not fields[1] then return 'session_not_found' end
  if fields[2] ~= run_id then return 'run_superseded' end
  if fields[1] ~= 'active' then return 'run_not_active' end
  return nil
end

-- Like run_guard, and also refuses work on a step that is already committed: a stale activity
-- attempt still running after its retry committed the step must not stage or stream again.
local function step_guard(run_id, step)
  local refused = run_guard(run_id)
  if refused then return refused end
  if tonumber(redis.call('HGET', state_key, 'stepCount')) >= tonumber(step) then
    return 'already_committed'
  end
  return nil
end

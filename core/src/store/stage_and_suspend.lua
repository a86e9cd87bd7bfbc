-- Stages a step's turn and suspends its run in one script, for a fresh turn whose every call is
-- awaited (no tool of the run's own runs between the two): stage_turn.lua's body, then, when it
-- staged the turn, commit_suspended_step.lua's, each as it runs alone (the script's text holds
-- both as functions of their own KEYS and ARGV). Answers the suspension's reply when both wrote;
-- {'unstaged'} when the staging wrote nothing (an attempt staged the step first, a call id is to
-- be renamed, or a guard refused), {'staged'} when the turn is staged but the suspension refused:
-- either way the caller takes the usual way, staging then committing, which meets each case.
-- ARGV: the count of stage_turn's arguments, then those, then commit_suspended_step's.
local staged_key = KEYS[3]
local call_ids_key = KEYS[4]
local messages_key = KEYS[5]
local checkpoints_key = KEYS[6]
local usage_key = KEYS[7]
local pending_key = KEYS[8]
local ownership_key = KEYS[9]
local open_deadlines_key = KEYS[10]
local stage_count = tonumber(ARGV[1])

local staged = stage_turn_script(
  {state_key, stream_key, staged_key, call_ids_key, root_state_key, root_stream_key},
  {unpack(ARGV, 2, 1 + stage_count)})
if staged[1] ~= 'ok' then return {'unstaged'} end
local committed = commit_suspended_step_script(
  {state_key, stream_key, staged_key, messages_key, checkpoints_key, usage_key, pending_key,
    ownership_key, open_deadlines_key, root_state_key, root_stream_key},
  {unpack(ARGV, 2 + stage_count)})
if committed[1] ~= 'ok' then return {'staged'} end
return committed

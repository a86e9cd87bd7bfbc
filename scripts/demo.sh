#!/usr/bin/env bash
# Runs the demo offline: installs and starts what is missing, builds Baton, starts `batond dev`
# and a second `batond dev` (another service, whose agent the first calls as a remote child),
# and runs sessions of the demo agents (scripted models, calculator and clock tools, the tools of
# an MCP server).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh

say() { printf '[demo] %s\n' "$*" >&2; }

# Cargo prints one line per crate it compiles, so a first build shows its progress. The binaries
# are where cargo puts them (CARGO_TARGET_DIR, else target/).
bin=${CARGO_TARGET_DIR:-target}/debug
if [ -x "$bin/batond" ] && [ -x "$bin/baton" ]; then
  say "building batond and baton (debug; only what changed)"
else
  say "building batond and baton (debug; the first build compiles ~400 crates: several minutes on 2 cores)"
fi
if ! cargo build -p baton-worker -p baton-client 2>&1 |
  grep --line-buffered -E '^ *(Compiling|Finished|error)' >&2; then
  say "the build failed; see: cargo build -p baton-worker -p baton-client"
  exit 1
fi

listen=${BATON_LISTEN:-127.0.0.1:8080}
export BATON_LISTEN=$listen

# Waits until the batond with pid $1 answers on $2, or shows its log ($3) and fails.
wait_up() {
  local pid=$1 address=$2 log=$3
  for _ in $(seq 100); do
    curl -fsS "http://$address/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  cat "$log" >&2
  exit 1
}

# A second service: another batond (its own port, key prefix and task queue) serving the
# `researcher` agent on its producer mount, behind an operator key; the first service's
# `demo_remote` agent delegates to it as a remote sub-agent (docs/remote-agents.md).
remote_listen=${BATON_DEMO_REMOTE_LISTEN:-127.0.0.1:8081}
# The key the demo's consumer calls the producer's mount with (a service key: the mount only,
# which an open producer still requires), and the one curl plays another service with on this
# batond's own mount. At least 32 bytes each (batond refuses shorter ones); real ones come from
# `openssl rand -base64 32`.
remote_key=demo-consumer-service-key-32-bytes
curl_service_key=demo-curl-service-key-of-32-bytes
cat >"$log_dir/demo-producer.toml" <<'TOML'
[[agent]]
name = "researcher"
max_steps = 4
tools = ["calculator", "sleep"]
[agent.model]
kind = "scripted"
turns = [
  { tool_calls = [{ name = "ask_user", arguments = { question = "Who is asking?" } }] },
  { tool_calls = [{ name = "sleep", arguments = { ms = 500 } }, { name = "calculator", arguments = { operation = "multiply", a = 6, b = 7 } }] },
  { text = "{{result:ask_user}}, 6 times 7 is {{result:calculator}}" },
]

[[agent.client_tool]]
name = "ask_user"
description = "Asks the person."
input_schema = { type = "object", properties = { question = { type = "string" } } }
render = "elicitation"
TOML
cat >"$log_dir/demo-consumer.toml" <<TOML
[[agent]]
name = "demo_remote"
system_prompt = "You delegate questions to the researcher another service runs."
max_steps = 3
[agent.model]
kind = "scripted"
turns = [
  { tool_calls = [{ name = "researcher", arguments = { message = "What is 6 times 7?" } }] },
  { text = "The remote researcher says: {{result:researcher}}" },
]

[[agent.remote_agent]]
name = "researcher"
description = "Asks the researcher agent of the second service."
url = "http://$remote_listen/agents"
agent_type = "researcher"
bearer_env = "DEMO_REMOTE_TOKEN"

# The same researcher over A2A (every mounted agent is also an A2A agent): declared by its card.
[[agent]]
name = "demo_a2a"
system_prompt = "You delegate questions to the researcher another service serves over A2A."
max_steps = 3
[agent.model]
kind = "scripted"
turns = [
  { tool_calls = [{ name = "researcher", arguments = { message = "What is 6 times 7?" } }] },
  { text = "The researcher says, over A2A: {{result:researcher}}" },
]

[[agent.a2a_agent]]
name = "researcher"
description = "Asks the researcher agent of the second service, over A2A."
card_url = "http://$remote_listen/agents/researcher/.well-known/agent-card.json"
bearer_env = "DEMO_REMOTE_TOKEN"

# Tools of an MCP server (examples/mcp/notes_server.py, the official Python SDK, which
# services.sh installed), started by batond over stdio (docs/agents.md).
[[mcp_server]]
name = "notes"
command = "$BATON_TEST_PYTHON"
args = ["$PWD/examples/mcp/notes_server.py"]
env = { NOTES_FILE = "$log_dir/demo-notes.json" }

[[agent]]
name = "demo_notes"
system_prompt = "You keep the user's notes with the notes server's tools."
max_steps = 5
tools = ["add_note", "list_notes"]
[agent.model]
kind = "scripted"
turns = [
  { tool_calls = [{ name = "ask_user", arguments = { question = "What should I note?" } }] },
  { tool_calls = [{ name = "add_note", arguments = { text = "{{result:ask_user}}" } }] },
  { tool_calls = [{ name = "list_notes" }] },
  { text = "Noted. Your notes: {{result:list_notes}}" },
]

[[agent.client_tool]]
name = "ask_user"
description = "Asks the user a question."
input_schema = { type = "object", properties = { question = { type = "string" } } }
output_schema = { type = "string" }
TOML
say "starting a second batond dev (the producer of a remote child) on $remote_listen; its log: $log_dir/batond-remote.log"
BATON_SERVICE_KEYS=demo-consumer=$remote_key "$bin"/batond dev --allow-unauthenticated \
  --listen "$remote_listen" \
  --key-prefix baton-demo-remote --task-queue baton-demo-remote \
  --agents "$log_dir/demo-producer.toml" >"$log_dir/batond-remote.log" 2>&1 &
remote_pid=$!
trap 'kill $remote_pid 2>/dev/null; wait $remote_pid 2>/dev/null || true' EXIT
wait_up $remote_pid "$remote_listen" "$log_dir/batond-remote.log"

say "starting batond dev (server and worker in one process) on $listen; its log: $log_dir/batond.log"
DEMO_REMOTE_TOKEN=$remote_key BATON_SERVICE_KEYS=demo-curl=$curl_service_key \
  "$bin"/batond dev --allow-unauthenticated \
  --agents "$log_dir/demo-consumer.toml" >"$log_dir/batond.log" 2>&1 &
batond_pid=$!
trap 'kill $batond_pid $remote_pid 2>/dev/null; wait $batond_pid $remote_pid 2>/dev/null || true' EXIT
wait_up $batond_pid "$listen" "$log_dir/batond.log"
say "batond is up; running the demo agent (scripted model, calculator and clock tools)"
say "the chat page (useChat's protocol, the demo_hitl agent): http://$listen/chat?agent=demo_hitl"

"$bin"/baton --server "http://$listen" run --agent demo \
  "What is 6 times 7, and what time is it?"

# Runs AGENT on PROMPT, its questions answered from the terminal, or, when stdin is not one (a
# pipe, CI), from ANSWERS (one per line).
run_answering() {
  local agent=$1 prompt=$2 answers=$3
  if [ -t 0 ]; then
    "$bin"/baton --server "http://$listen" run --agent "$agent" --answer "$prompt"
  else
    printf '%s' "$answers" |
      "$bin"/baton --server "http://$listen" run --agent "$agent" --answer "$prompt"
  fi
}

# Human in the loop: the run suspends on a client tool (no workflow waits), the answer is read
# from the terminal and submitted, and a fresh workflow resumes the session; then it suspends on
# a call that needs approval, approved from the terminal the same way.
echo
run_answering demo_hitl "Ask me something while you add 40 and 2." $'"blue"\ny\n'

# Sub-agents: the trip planner delegates to an interviewer sub-agent, which asks the user a
# question. The question is answered through the planner's (root) session; one resume on the
# root runs the interviewer to its end, whose answer then resumes the planner.
echo
run_answering demo_tree "Plan a short trip for me." $'"Lisbon"\n'

# The producer mount: another service runs this server's agents as its remote sub-agents over
# HTTP (docs/mount.md). Here curl plays that service: a start of a session id of its choosing,
# the stream to the turn's end (paused: the agent waits for a person), a retried start that
# attaches (409 ALREADY_RUNNING with the session's streamId, no second run), and the status.
echo
mount="http://$listen/agents/demo_hitl"
remote_session="remote-demo-$$"
say "the producer mount: POST $mount/start with the caller's own session id"
service=(-H "authorization: Bearer $curl_service_key")
curl -fsS "${service[@]}" -H 'content-type: application/json' \
  -d "{\"sessionId\":\"$remote_session\",\"message\":\"Ask me something while you add 40 and 2.\"}" \
  "$mount/start"
echo
say "its stream, to the turn's end (the last two events: suspended, then end with status paused)"
curl -fsS -N "${service[@]}" "$mount/sse?sessionId=$remote_session" | grep '^data:' | tail -n 2
say "the same start again attaches instead of starting a second run"
curl -sS "${service[@]}" -H 'content-type: application/json' \
  -d "{\"sessionId\":\"$remote_session\",\"message\":\"again\"}" "$mount/start"
echo
curl -fsS "${service[@]}" "$mount/status?sessionId=$remote_session"
echo

# Two services: the demo_remote agent calls `researcher`, which the second batond runs as a
# remote child (started under an id derived from the call, followed over its SSE, its chunks
# copied onto the caller's stream stamped remoteSource). The researcher asks the person who is
# asking: its turn ends paused, the caller suspends too (nothing waits on either service), the
# question is listed and answered through the first service's root, which relays the answer to
# the producer; the root's resume continues the remote child, whose end resumes the caller.
echo
say "a remote child on the second service: demo_remote delegates to its researcher, which asks you"
run_answering demo_remote "What is 6 times 7?" $'"Ada"\n'

# The same across A2A: the researcher's card says where its JSON-RPC endpoint is; the call's
# message begins a task there, the task's input-required question is relayed to this root as the
# remote child's was, the answer goes as a message on the task, and its artifact is the result.
echo
say "the same remote child over A2A: demo_a2a calls the researcher by its agent card"
run_answering demo_a2a "What is 6 times 7?" $'"Grace"\n'

# Tools from an MCP server: demo_notes asks what to note, then calls the notes server's add_note
# and list_notes (a Python process batond started over stdio) as it calls its own tools.
echo
say "tools from an MCP server: demo_notes writes your note down with the notes server's tools"
rm -f "$log_dir/demo-notes.json"
run_answering demo_notes "Take a note." $'"buy milk"\n'

# The chat page talks to the demo_hitl agent in a browser; batond serves it until this script ends.
echo
say "the chat page: http://$listen/chat?agent=demo_hitl (and ?agent=demo_remote for the remote child)"
if [ -t 0 ]; then
  say "batond keeps serving it; press Enter to stop"
  read -r _
fi

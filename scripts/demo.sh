#!/usr/bin/env bash
# Runs the demo offline: installs and starts what is missing, builds Baton, starts `batond dev`
# and runs one session of the demo agent (scripted model, calculator and clock tools).
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
say "starting batond dev (server and worker in one process) on $listen; its log: $log_dir/batond.log"
"$bin"/batond dev --allow-unauthenticated >"$log_dir/batond.log" 2>&1 &
batond_pid=$!
trap 'kill $batond_pid 2>/dev/null; wait $batond_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -fsS "http://$listen/healthz" >/dev/null 2>&1 && break
  kill -0 $batond_pid 2>/dev/null || { cat "$log_dir/batond.log" >&2; exit 1; }
  sleep 0.1
done
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
curl -fsS -H 'content-type: application/json' \
  -d "{\"sessionId\":\"$remote_session\",\"message\":\"Ask me something while you add 40 and 2.\"}" \
  "$mount/start"
echo
say "its stream, to the turn's end (the last two events: suspended, then end with status paused)"
curl -fsS -N "$mount/sse?sessionId=$remote_session" | grep '^data:' | tail -n 2
say "the same start again attaches instead of starting a second run"
curl -sS -H 'content-type: application/json' \
  -d "{\"sessionId\":\"$remote_session\",\"message\":\"again\"}" "$mount/start"
echo
curl -fsS "$mount/status?sessionId=$remote_session"
echo

# The chat page talks to the demo_hitl agent in a browser; batond serves it until this script ends.
echo
say "the chat page: http://$listen/chat?agent=demo_hitl"
if [ -t 0 ]; then
  say "batond keeps serving it; press Enter to stop"
  read -r _
fi

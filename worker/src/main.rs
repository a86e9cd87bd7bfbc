//! `batond`: Baton's daemon. `batond worker` runs the Temporal worker, `batond server` the HTTP
//! API (and the gRPC service with `--grpc-listen`), `batond dev` both in one process.
//! Configuration comes from flags or `BATON_*` variables (see `config/`).

mod config;

use anyhow::Context;
use baton_worker::{
    AppState, WorkerSettings, connect_temporal,
    metrics::{Metrics, serve_metrics},
    run_worker, serve, serve_grpc,
    sweeps::CallbackSweep,
};
use clap::{CommandFactory, FromArgMatches};
use config::{Cli, LogFormat, Role};
use tokio_util::sync::CancellationToken;

/// The process's allocator: mimalloc, which halved the allocator's share of the worker's profile
/// (a third of the server's) under the rounds benchmark, where glibc's malloc was a ninth to a
/// sixth of the CPU (docs/benchmarks.md, issue 40).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Reads the flags, then runs the role on the runtime `--threads` asks for.
fn main() -> std::process::ExitCode {
    let matches = Cli::command().get_matches();
    let outcome = Cli::from_arg_matches(&matches)
        .map_err(anyhow::Error::from)
        .and_then(|cli| {
            let runtime = cli
                .runtime
                .runtime()
                .context("cannot start the async runtime")?;
            runtime.block_on(run(cli, &matches))
        });
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("batond: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli, matches: &clap::ArgMatches) -> anyhow::Result<()> {
    let metrics = Metrics::default();
    init_logging(cli.observe.log_format, &metrics);
    for flag in config::secrets_on_the_command_line(matches) {
        tracing::warn!(
            flag,
            "a secret given as a flag shows in `ps` to every user of this machine: set its \
             BATON_* variable instead"
        );
    }
    if cli.demo_mode() {
        tracing::warn!(
            "demo mode: POST /chat/demo-token answers the demo user's token to anyone who \
             reaches this server (an open dev server only; an operator key turns it off)"
        );
    }
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(shutdown.clone()));

    let store = cli.redis.connect().await?;
    let temporal = connect_temporal(&cli.temporal.settings()).await?;
    let registry = cli.model.registry().await?;

    let server = match cli.role {
        Role::Server | Role::Dev => {
            let state = AppState {
                store: store.clone(),
                registry: registry.clone(),
                temporal: temporal.clone(),
                task_queue: cli.temporal.task_queue.as_str().into(),
                policy: cli.activities.policy(),
                streams: Default::default(),
                http: reqwest::Client::new(),
                metrics: metrics.clone(),
                options: cli.server_options()?.into(),
            };
            let grpc = match cli.server.grpc_listen {
                Some(address) => {
                    let listener = tokio::net::TcpListener::bind(address)
                        .await
                        .with_context(|| format!("cannot listen for gRPC on {address}"))?;
                    tracing::info!(address = %listener.local_addr()?, "gRPC service listening");
                    Some(tokio::spawn(serve_grpc(
                        listener,
                        state.clone(),
                        shutdown.clone(),
                    )))
                }
                None => None,
            };
            let listen = cli.server.listen;
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on {listen}"))?;
            tracing::info!(address = %listener.local_addr()?, "HTTP server listening");
            let stop = shutdown.clone();
            let http = tokio::spawn(serve(
                listener,
                state,
                async move { stop.cancelled().await },
            ));
            Some((http, grpc))
        }
        Role::Worker => None,
    };

    if let (Role::Worker, Some(address)) = (cli.role, cli.observe.metrics_listen) {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("cannot listen for metrics on {address}"))?;
        tracing::info!(address = %listener.local_addr()?, "metrics listening");
        let stop = shutdown.clone();
        tokio::spawn(serve_metrics(listener, metrics.clone(), async move {
            stop.cancelled().await
        }));
    }

    match cli.role {
        Role::Worker | Role::Dev => {
            run_worker(
                temporal,
                WorkerSettings {
                    zombie_grace: cli.temporal.zombie_grace(),
                    deadline_horizon: cli.temporal.deadline_horizon(),
                    policy: cli.activities.policy(),
                    callbacks: cli.mount.callback_sweep().map(|sweep| CallbackSweep {
                        dropped: Some(metrics.callbacks_dropped.clone()),
                        ..sweep
                    }),
                    remote_waits: cli.remote.remote_wait_sweep(),
                    remote_callback_url: cli.remote.callback_url()?,
                    log_cache: cli.memory.log_cache(),
                    heartbeat_every: cli.temporal.heartbeat_every(),
                    sticky_timeout: cli.temporal.sticky_timeout(),
                    ..WorkerSettings::new(cli.temporal.task_queue.clone())
                },
                store,
                registry,
                shutdown.clone(),
            )
            .await?;
        }
        Role::Server => shutdown.cancelled().await,
    }
    if let Some((http, grpc)) = server {
        http.await?.context("the HTTP server failed")?;
        if let Some(grpc) = grpc {
            grpc.await?.context("the gRPC service failed")?;
        }
    }
    tracing::info!("stopped");
    Ok(())
}

/// The process's subscriber: the log on stdout (filtered by `RUST_LOG`, default
/// `info,temporalio_sdk_core=warn`), and the client-call counters, which see their events
/// whatever the log's filter.
fn init_logging(format: LogFormat, metrics: &Metrics) {
    use tracing_subscriber::{Layer, layer::SubscriberExt, util::SubscriberInitExt};
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,temporalio_sdk_core=warn".into());
    let log = tracing_subscriber::fmt::layer();
    let log = match format {
        LogFormat::Text => log.boxed(),
        LogFormat::Json => log.json().flatten_event(true).boxed(),
    };
    tracing_subscriber::registry()
        .with(log.with_filter(filter))
        .with(metrics.client_calls.layer())
        .with(metrics.mcp_calls.layer())
        .init();
}

async fn stop_on_signal(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler installs");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    tracing::info!("signal received, shutting down");
    shutdown.cancel();
}

//! `batond`: Baton's daemon. `batond worker` runs the Temporal worker, `batond server` the HTTP
//! API (and the gRPC service with `--grpc-listen`), `batond dev` both in one process. Configuration comes from flags or `BATON_*` variables.

use anyhow::Context;
use baton_activities::io::ActivityPolicy;
use baton_core::{
    AgentRegistry, Model, Store,
    config::{ModelBuilder, ModelConfig, agents_from_toml_with},
    submit::SubmitLimits,
};
use baton_models::ProviderModels;
use baton_worker::auth::{Auth, BuiltinAuth};
use baton_worker::{
    AppState, ServerOptions, TemporalSettings, WorkerSettings, connect_temporal, demo, run_worker,
    serve, serve_grpc,
};
use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
#[command(
    name = "batond",
    version,
    about = "Baton: durable AI agents on Temporal and Redis"
)]
struct Cli {
    #[command(subcommand)]
    role: Role,
    /// Temporal frontend address.
    #[arg(
        long,
        env = "BATON_TEMPORAL_ADDRESS",
        default_value = "http://127.0.0.1:7233",
        global = true
    )]
    temporal_address: String,
    #[arg(
        long,
        env = "BATON_TEMPORAL_NAMESPACE",
        default_value = "default",
        global = true
    )]
    namespace: String,
    #[arg(long, env = "BATON_TASK_QUEUE", default_value = "baton", global = true)]
    task_queue: String,
    #[arg(
        long,
        env = "BATON_REDIS_URL",
        default_value = "redis://127.0.0.1:6379",
        global = true
    )]
    redis_url: String,
    /// Prefix of every Redis key Baton writes.
    #[arg(long, env = "BATON_KEY_PREFIX", default_value = "baton", global = true)]
    key_prefix: String,
    /// Largest client-tool result a submit may carry, in bytes of JSON.
    #[arg(long, env = "BATON_MAX_RESULT_BYTES", default_value_t = 1 << 20, global = true)]
    max_result_bytes: usize,
    /// Put validation details in validation_error and INVALID_RESULT answers.
    #[arg(long, env = "BATON_VERBOSE_ERRORS", global = true)]
    verbose_errors: bool,
    /// Resume a session by itself when a submit completes its batch (the submit answers
    /// continuation new_run) instead of leaving it to the caller (caller_resumes).
    #[arg(long, env = "BATON_RESUME_ON_SUBMIT", global = true)]
    resume_on_submit: bool,
    /// An operator API key (bearer); repeat for several. Enables built-in auth: `/start` then
    /// answers a session token bound to the new session.
    #[arg(
        long = "api-key",
        env = "BATON_API_KEYS",
        value_delimiter = ',',
        global = true
    )]
    api_keys: Vec<String>,
    /// Secret that signs session tokens (servers sharing it accept each other's tokens). Without
    /// it a random one is made, and tokens hold on this process only.
    #[arg(
        long,
        env = "BATON_TOKEN_SECRET",
        global = true,
        hide_env_values = true
    )]
    token_secret: Option<String>,
    /// How long a session token is valid, in seconds.
    #[arg(
        long,
        env = "BATON_TOKEN_TTL_SECS",
        default_value_t = 3600,
        global = true
    )]
    token_ttl_secs: u64,
    /// Submits a session may make per minute (a token bucket shared by all servers); 0 is
    /// unlimited.
    #[arg(
        long,
        env = "BATON_SUBMITS_PER_MINUTE",
        default_value_t = 60,
        global = true
    )]
    submits_per_minute: u32,
    /// Chunks a session's stream keeps (the oldest are trimmed; a follower asking for them is
    /// told TRUNCATED); 0 keeps all.
    #[arg(
        long,
        env = "BATON_STREAM_MAX_CHUNKS",
        default_value_t = 100_000,
        global = true
    )]
    stream_max_chunks: u64,
    /// Let operators name the sessions they start (`sessionId` in `/start`).
    #[arg(long, env = "BATON_ALLOW_CLIENT_SESSION_IDS", global = true)]
    allow_client_session_ids: bool,
    /// Serve the HTTP API without authentication (loopback demos, private networks only).
    #[arg(long, env = "BATON_ALLOW_UNAUTHENTICATED", global = true)]
    allow_unauthenticated: bool,
    /// A TOML file of agents to serve beside the built-in ones (see the README).
    #[arg(long, env = "BATON_AGENTS_FILE", global = true)]
    agents: Option<std::path::PathBuf>,
    /// Address the HTTP server listens on (server and dev).
    #[arg(
        long,
        env = "BATON_LISTEN",
        default_value = "127.0.0.1:8080",
        global = true
    )]
    listen: SocketAddr,
    /// Address the gRPC service listens on beside HTTP (server and dev); off when not given.
    #[arg(long, env = "BATON_GRPC_LISTEN", global = true)]
    grpc_listen: Option<SocketAddr>,
    /// Run the demo agents on a real model instead of their script: `provider:model`, e.g.
    /// `openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`.
    #[arg(long, env = "BATON_MODEL", global = true)]
    model: Option<ModelConfig>,
    /// Base URL of the `--model` API, e.g. `http://127.0.0.1:11434/v1` for a local Ollama;
    /// default the provider's hosted API.
    #[arg(long, env = "BATON_MODEL_BASE_URL", global = true, requires = "model")]
    model_base_url: Option<String>,
    /// NAME of the environment variable holding the `--model` API key. Default for the hosted
    /// APIs: OPENAI_API_KEY or ANTHROPIC_API_KEY; with --model-base-url: none (no key sent).
    #[arg(
        long,
        env = "BATON_MODEL_API_KEY_ENV",
        global = true,
        requires = "model"
    )]
    model_api_key_env: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Role {
    /// Run the Temporal worker only.
    Worker,
    /// Run the HTTP server only.
    Server,
    /// Run the worker and the server in one process.
    Dev,
}

/// The server's auth from the flags; none given is refused (fail-closed).
fn auth(cli: &Cli) -> anyhow::Result<Auth> {
    if cli.api_keys.is_empty() {
        if cli.allow_unauthenticated {
            return Ok(Auth::AllowUnauthenticated);
        }
        anyhow::bail!(
            "refusing to serve without authentication: give operator keys (--api-key or \
             BATON_API_KEYS) or pass --allow-unauthenticated"
        );
    }
    let secret = match &cli.token_secret {
        Some(secret) => secret.as_bytes().to_vec(),
        None => {
            tracing::warn!("no --token-secret: session tokens hold on this process only");
            let mut secret = vec![0u8; 32];
            ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret)
                .map_err(|_| anyhow::anyhow!("no system randomness for the token secret"))?;
            secret
        }
    };
    Ok(Auth::Builtin(std::sync::Arc::new(BuiltinAuth::new(
        cli.api_keys.clone(),
        &secret,
        std::time::Duration::from_secs(cli.token_ttl_secs),
    ))))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("batond: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,temporalio_sdk_core=warn".into()),
        )
        .init();
    let cli = Cli::parse();
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(shutdown.clone()));

    let store = Store::connect(&cli.redis_url, cli.key_prefix.clone())
        .await
        .with_context(|| format!("cannot reach Redis at {}", cli.redis_url))?;
    let temporal = connect_temporal(&TemporalSettings {
        address: cli.temporal_address.clone(),
        namespace: cli.namespace.clone(),
    })
    .await?;
    let registry = registry(&cli)?;

    let server = match cli.role {
        Role::Server | Role::Dev => {
            let state = AppState {
                store: store.clone().with_stream_max_chunks(cli.stream_max_chunks),
                registry: registry.clone(),
                temporal: temporal.clone(),
                task_queue: cli.task_queue.clone(),
                policy: ActivityPolicy::default(),
                streams: Default::default(),
                metrics: Default::default(),
                options: ServerOptions {
                    submit_limits: SubmitLimits {
                        max_result_bytes: cli.max_result_bytes,
                    },
                    verbose_errors: cli.verbose_errors,
                    resume_on_submit: cli.resume_on_submit,
                    auth: auth(&cli)?,
                    submits_per_minute: (cli.submits_per_minute > 0)
                        .then_some(cli.submits_per_minute),
                    stream_max_chunks: cli.stream_max_chunks,
                    allow_client_session_ids: cli.allow_client_session_ids,
                },
            };
            let grpc = match cli.grpc_listen {
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
            let listener = tokio::net::TcpListener::bind(cli.listen)
                .await
                .with_context(|| format!("cannot listen on {}", cli.listen))?;
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

    match cli.role {
        Role::Worker | Role::Dev => {
            run_worker(
                temporal,
                WorkerSettings::new(cli.task_queue.clone()),
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

/// The built-in agents (on `--model` if given), plus those of the agents file if one is given.
/// A bad file, or a model whose key variable is not set, stops the start with the reason.
fn registry(cli: &Cli) -> anyhow::Result<AgentRegistry> {
    // The only place API keys are read: from the variables the configuration names.
    let models = ProviderModels::new(|name| std::env::var(name).ok());
    let mut agents = match demo_model(cli) {
        None => vec![demo::demo_agent(), demo::demo_hitl_agent()],
        Some(config) => {
            let model: std::sync::Arc<dyn Model> = models
                .build(&config)
                .map_err(|e| anyhow::anyhow!("--model: {e}"))?;
            tracing::info!(provider = %config.provider, model = %config.model, "demo agents use a real model");
            vec![
                demo::demo_agent_with(model.clone()),
                demo::demo_hitl_agent_with(model),
            ]
        }
    };
    if let Some(path) = &cli.agents {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the agents file {}", path.display()))?;
        let declared = agents_from_toml_with(&text, &demo::tool_catalogue(), &models)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        tracing::info!(count = declared.len(), file = %path.display(), "agents loaded");
        agents.extend(declared);
    }
    AgentRegistry::new(agents).map_err(|e| anyhow::anyhow!("agents: {e}"))
}

/// The `--model` configuration, with the conventional key variable of a hosted API.
fn demo_model(cli: &Cli) -> Option<ModelConfig> {
    let mut config = cli.model.clone()?;
    config.base_url = cli.model_base_url.clone();
    config.api_key_env = cli.model_api_key_env.clone().or_else(|| {
        let hosted = config.base_url.is_none();
        hosted.then(|| match config.provider {
            baton_core::config::Provider::OpenAi => "OPENAI_API_KEY".to_owned(),
            baton_core::config::Provider::Anthropic => "ANTHROPIC_API_KEY".to_owned(),
        })
    });
    Some(config)
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

//! The Baton processes of the campaign: `reliability role server` serves the HTTP API and
//! `reliability role worker` the Temporal worker, with the campaign's agents, configured by the
//! environment its parent sets. They use the same library entry points as `batond`.

use baton_core::Store;
use baton_worker::{
    AppState, ServerOptions, TemporalSettings, connect_temporal, metrics::Metrics, run_worker,
};
use tokio_util::sync::CancellationToken;

pub const REDIS_URL: &str = "RELIABILITY_REDIS_URL";
pub const TEMPORAL_ADDRESS: &str = "RELIABILITY_TEMPORAL_ADDRESS";
pub const TASK_QUEUE: &str = "RELIABILITY_TASK_QUEUE";
pub const KEY_PREFIX: &str = "RELIABILITY_KEY_PREFIX";
pub const LISTEN_PORT: &str = "RELIABILITY_LISTEN_PORT";
pub const RESUME_ON_SUBMIT: &str = "RELIABILITY_RESUME_ON_SUBMIT";
/// Set (non-empty) for a server with built-in auth and a service key (the credentials below)
/// instead of an open one: only the scenarios whose clients carry those credentials set it.
pub const KEYED: &str = "RELIABILITY_KEYED";

/// A keyed server's one operator key (at least 32 bytes, as `batond` requires) and its name in
/// the audit log.
pub const OPERATOR_KEY: &str = "campaign-operator-key-0123456789abcdef";
pub const OPERATOR_NAME: &str = "campaign-operator";
/// A keyed server's token secret: it signs the session and user tokens (32 bytes).
pub const TOKEN_SECRET: &[u8; 32] = b"campaign-token-secret-0123456789";
/// A keyed server's service key, the producer mount's caller, and its service's name.
pub const SERVICE_NAME: &str = "campaign-service";
pub const SERVICE_KEY: &str = "campaign-service-key-0123456789abcdef";

fn variable(name: &str) -> anyhow::Result<String> {
    std::env::var(name).map_err(|_| anyhow::anyhow!("{name} is not set"))
}

fn temporal() -> anyhow::Result<TemporalSettings> {
    Ok(TemporalSettings {
        address: variable(TEMPORAL_ADDRESS)?,
        namespace: "default".to_owned(),
    })
}

/// Runs the role named on the command line until the process is killed.
pub async fn run(role: &str) -> anyhow::Result<()> {
    // JSON lines, as `batond --log-format json` writes them: the campaign reads the client-call
    // events back from the process logs. The metrics layer counts the same events.
    use tracing_subscriber::{Layer, layer::SubscriberExt, util::SubscriberInitExt};
    let metrics = Metrics::default();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "info,temporalio_sdk_core=warn".into());
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .json()
                .flatten_event(true)
                .with_filter(filter),
        )
        .with(metrics.client_calls.layer())
        .init();
    let store = Store::connect(&variable(REDIS_URL)?, variable(KEY_PREFIX)?).await?;
    let temporal = connect_temporal(&temporal()?).await?;
    let task_queue = variable(TASK_QUEUE)?;
    match role {
        "worker" => {
            // A claimed run whose workflow never started (a resume's reply lost to a Redis
            // kill) is started by the zombie sweep once quiet this long: well within the
            // campaign's wait for every session to end.
            let settings = baton_worker::runner::WorkerSettings {
                zombie_grace: Some(std::time::Duration::from_secs(10)),
                ..baton_tests::test_worker_settings(&task_queue)
            };
            run_worker(
                temporal,
                settings,
                store,
                crate::agents::registry(),
                CancellationToken::new(),
            )
            .await
        }
        "server" => {
            let keyed = !variable(KEYED)?.is_empty();
            let (auth, service_keys) = if keyed {
                let builtin = baton_worker::auth::BuiltinAuth::with_named_keys(
                    vec![(OPERATOR_NAME.to_owned(), OPERATOR_KEY.to_owned())],
                    TOKEN_SECRET,
                    baton_worker::auth::DEFAULT_TOKEN_TTL,
                );
                (
                    baton_worker::auth::Auth::Builtin(std::sync::Arc::new(builtin)),
                    baton_worker::auth::ServiceKeys::new(vec![(
                        SERVICE_NAME.to_owned(),
                        SERVICE_KEY.to_owned(),
                    )]),
                )
            } else {
                (
                    baton_worker::auth::Auth::AllowUnauthenticated,
                    baton_worker::auth::ServiceKeys::none(),
                )
            };
            let state = AppState {
                store,
                registry: crate::agents::registry(),
                temporal,
                task_queue: task_queue.into(),
                policy: baton_tests::test_policy(),
                streams: Default::default(),
                http: reqwest::Client::new(),
                metrics,
                options: ServerOptions {
                    auth,
                    service_keys,
                    // The campaign's submits must never meet the rate limit: it measures loss.
                    submits_per_minute: None,
                    // Nor the per-subject buckets: every caller of the campaign is one subject.
                    subject_limits: baton_worker::state::SubjectLimits::OFF,
                    resume_on_submit: !variable(RESUME_ON_SUBMIT)?.is_empty(),
                    // The campaign's own load is above the default cap of 512 open connections
                    // (1,000 concurrent submits; 300 slow connections beside 256 followers), and
                    // what it measures is loss, the header deadline and the follower caps, not
                    // that cap (tested in `e2e/limits.rs`): it is raised, as a deployment
                    // expecting that many clients would.
                    connection_limits: baton_worker::state::ConnectionLimits {
                        max_connections: 2048,
                        // Every client of the campaign is on loopback: one peer.
                        max_connections_per_peer: 0,
                        ..baton_worker::state::ConnectionLimits::default()
                    },
                    ..Default::default()
                }
                .into(),
            };
            let port: u16 = variable(LISTEN_PORT)?.parse()?;
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            baton_worker::serve(listener, state, std::future::pending()).await?;
            Ok(())
        }
        other => anyhow::bail!("unknown role {other}"),
    }
}

//! `batond`'s configuration surface: its flags, each with a `BATON_*` variable, grouped by what
//! they configure (one file per group, one heading per group in `--help`). A default is the
//! constant the library itself uses, never a second literal. Only the binary reads flags and
//! environment; the library receives the values built here.

mod activities;
mod auth;
mod limits;
mod memory;
mod model;
mod mount;
mod observe;
mod redis;
mod remote;
mod runtime;
mod server;
mod services;
mod temporal;

pub(crate) use auth::secrets_on_the_command_line;
pub(crate) use observe::LogFormat;

use baton_worker::{AllowedOrigins, ServerOptions};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "batond",
    version,
    about = "Baton: durable AI agents on Temporal and Redis"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) role: Role,
    #[command(flatten)]
    pub(crate) temporal: temporal::TemporalArgs,
    #[command(flatten)]
    pub(crate) activities: activities::ActivityArgs,
    #[command(flatten)]
    pub(crate) redis: redis::RedisArgs,
    #[command(flatten)]
    pub(crate) server: server::ServerArgs,
    #[command(flatten)]
    pub(crate) auth: auth::AuthArgs,
    #[command(flatten)]
    pub(crate) limits: limits::LimitArgs,
    #[command(flatten)]
    pub(crate) memory: memory::MemoryArgs,
    #[command(flatten)]
    pub(crate) model: model::ModelArgs,
    #[command(flatten)]
    pub(crate) mount: mount::MountArgs,
    #[command(flatten)]
    pub(crate) observe: observe::ObserveArgs,
    #[command(flatten)]
    pub(crate) remote: remote::RemoteArgs,
    #[command(flatten)]
    pub(crate) services: services::ServiceArgs,
    #[command(flatten)]
    pub(crate) runtime: runtime::RuntimeArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Subcommand)]
pub(crate) enum Role {
    /// Run the Temporal worker only.
    Worker,
    /// Run the HTTP server only.
    Server,
    /// Run the worker and the server in one process.
    Dev,
}

impl Cli {
    /// How the server treats requests, from the server, auth and limit flags. No auth
    /// configuration is refused (fail-closed).
    pub(crate) fn server_options(&self) -> anyhow::Result<ServerOptions> {
        Ok(ServerOptions {
            submit_limits: self.limits.submit_limits(),
            verbose_errors: self.server.verbose_errors,
            resume_on_submit: self.server.resume_on_submit,
            auth: self.auth.auth()?,
            service_keys: self.services.service_keys()?,
            submits_per_minute: self.limits.submits_per_minute(),
            subject_limits: self.limits.subject_limits()?,
            allow_client_session_ids: self.server.allow_client_session_ids,
            stream_max_chunks: self.limits.stream_max_chunks,
            mounts: self.mount.mounts(self.model.declared_mounts()?)?,
            follower_caps: self.limits.follower_caps(),
            connection_limits: self.limits.connection_limits()?,
            temporal_ui_url: self.server.temporal_ui_url.clone(),
            allowed_origins: self.allowed_origins()?,
            demo_user_tokens: self.demo_mode(),
            callback_hosts: self.mount.callback_hosts(self.role == Role::Dev)?,
        })
    }

    /// `batond dev`'s demo tokens (`POST /chat/demo-token`), only on an open dev server: with an
    /// operator key set, nobody gets a token without one.
    pub(crate) fn demo_mode(&self) -> bool {
        self.role == Role::Dev
            && self.auth.api_keys.is_empty()
            && self.auth.named_api_keys.is_empty()
    }

    /// The flag's origins and the agents file's, checked together.
    fn allowed_origins(&self) -> anyhow::Result<AllowedOrigins> {
        let mut origins = self.server.allowed_origins.clone();
        origins.extend(self.model.declared_origins()?);
        AllowedOrigins::parse(&origins).map_err(|e| anyhow::anyhow!("allowed origins: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_activities::io::ActivityPolicy;
    use clap::CommandFactory;

    #[test]
    fn the_flags_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn no_flags_give_the_library_defaults() {
        let cli = Cli::try_parse_from(["batond", "dev", "--allow-unauthenticated"]).unwrap();
        assert_eq!(cli.role, Role::Dev);
        assert_eq!(cli.activities.policy(), ActivityPolicy::default());
        assert_eq!(
            cli.memory.log_cache(),
            baton_activities::LogCacheBounds::default()
        );
        let options = cli.server_options().unwrap();
        let defaults = ServerOptions::default();
        assert_eq!(options.submit_limits, defaults.submit_limits);
        assert_eq!(options.submits_per_minute, defaults.submits_per_minute);
        assert_eq!(options.subject_limits, defaults.subject_limits);
        assert_eq!(options.stream_max_chunks, defaults.stream_max_chunks);
        assert_eq!(options.follower_caps, defaults.follower_caps);
        assert_eq!(options.connection_limits, defaults.connection_limits);
        assert!(!options.verbose_errors && !options.resume_on_submit);
        assert!(!options.allow_client_session_ids);
        assert_eq!(options.mounts.len(), 1);
        assert_eq!(options.mounts[0].base_path(), "/agents");
        assert!(!options.mounts[0].is_projected());
        let narrowed = Cli::try_parse_from([
            "batond",
            "dev",
            "--allow-unauthenticated",
            "--mount-base-path",
            "/internal/agents",
            "--mount-agents",
            "planner,researcher",
            "--mount-state-fields",
            "phase",
        ])
        .unwrap();
        let mounts = narrowed.server_options().unwrap().mounts;
        assert_eq!(mounts[0].base_path(), "/internal/agents");
        assert!(mounts[0].is_projected());
        assert!(narrowed.mount.callback_sweep().is_some());
        let none = Cli::try_parse_from([
            "batond",
            "dev",
            "--allow-unauthenticated",
            "--no-mount",
            "--callback-every-ms",
            "0",
        ]);
        let none = none.unwrap();
        assert!(none.server_options().unwrap().mounts.is_empty());
        assert!(none.mount.callback_sweep().is_none());
        let bad = Cli::try_parse_from([
            "batond",
            "dev",
            "--allow-unauthenticated",
            "--mount-base-path",
            "agents/",
        ]);
        assert!(bad.unwrap().server_options().is_err());
        assert_eq!(options.allowed_origins, AllowedOrigins::None);
        assert!(options.demo_user_tokens, "an open dev server has demo mode");
        // With an operator key, `batond dev` hands out no demo tokens.
        let key = "k".repeat(32);
        let keyed = Cli::try_parse_from(["batond", "dev", "--api-key", &key]).unwrap();
        assert!(!keyed.server_options().unwrap().demo_user_tokens);
        let named = format!("ops={key}");
        let named = Cli::try_parse_from(["batond", "dev", "--named-api-key", &named]).unwrap();
        assert!(!named.server_options().unwrap().demo_user_tokens);
        let origins = Cli::try_parse_from([
            "batond",
            "server",
            "--allow-unauthenticated",
            "--allowed-origin",
            "https://app.example,http://127.0.0.1:5173",
        ])
        .unwrap();
        let options = origins.server_options().unwrap();
        assert!(matches!(options.allowed_origins, AllowedOrigins::List(ref o) if o.len() == 2));
        assert!(!options.demo_user_tokens, "a server mints none");
        let bad = Cli::try_parse_from([
            "batond",
            "server",
            "--allow-unauthenticated",
            "--allowed-origin",
            "app.example",
        ]);
        assert!(bad.unwrap().server_options().is_err());
        let no_auth = Cli::try_parse_from(["batond", "server"]).unwrap();
        assert!(no_auth.server_options().is_err());
    }

    #[test]
    fn an_agents_file_adds_its_mounts_beside_the_flags() {
        let path = std::env::temp_dir().join(format!("baton-mounts-{}.toml", std::process::id()));
        let declared = "[browser]\nallowed_origins = [\"https://app.example\"]\n\n[[mount]]\nbase_path = \"/public/agents\"\nstate_fields = [\"phase\"]\n";
        std::fs::write(&path, declared).unwrap();
        let file = path.to_str().unwrap();
        let cli =
            Cli::try_parse_from(["batond", "dev", "--allow-unauthenticated", "--agents", file])
                .unwrap();
        let options = cli.server_options().unwrap();
        assert!(matches!(options.allowed_origins, AllowedOrigins::List(ref o) if o.len() == 1));
        let mounts = options.mounts;
        assert_eq!(mounts.len(), 2);
        assert_eq!(mounts[1].base_path(), "/public/agents");
        assert!(mounts[1].is_projected() && !mounts[0].is_projected());
        let twice = Cli::try_parse_from([
            "batond",
            "dev",
            "--allow-unauthenticated",
            "--agents",
            file,
            "--mount-base-path",
            "/public/agents",
        ])
        .unwrap();
        assert!(twice.server_options().is_err());
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn weak_secrets_are_refused_and_flags_are_named() {
        let refused = |arguments: &[&str]| {
            let cli = Cli::try_parse_from(arguments).unwrap();
            cli.server_options().unwrap_err().to_string()
        };
        let key = "k".repeat(32);
        let short = refused(&["batond", "server", "--api-key", &key, "--token-secret", "a"]);
        assert!(short.contains("at least 32"), "{short}");
        let almost = "s".repeat(31);
        assert!(
            refused(&[
                "batond",
                "server",
                "--api-key",
                &key,
                "--token-secret",
                &almost
            ])
            .contains("31 bytes")
        );
        for keys in ["", "a,,b", " "] {
            let empty = refused(&["batond", "server", "--api-key", keys]);
            assert!(empty.contains("empty"), "{keys:?}: {empty}");
        }
        let strong = "s".repeat(32);
        // An operator key under 32 bytes is refused as the token secret is, named or not.
        let key31 = "k".repeat(31);
        let weak_key = refused(&["batond", "server", "--api-key", &key31]);
        assert!(weak_key.contains("31 bytes"), "{weak_key}");
        let named = format!("ops={key31}");
        let weak_named = refused(&["batond", "server", "--named-api-key", &named]);
        assert!(weak_named.contains("31 bytes"), "{weak_named}");
        assert!(
            !weak_named.contains(&key31),
            "the key is never echoed: {weak_named}"
        );
        let key = "k".repeat(32);
        let arguments = [
            "batond",
            "server",
            "--api-key",
            &key,
            "--token-secret",
            &strong,
        ];
        let cli = Cli::try_parse_from(arguments).unwrap();
        assert!(cli.server_options().is_ok());
        let matches = Cli::command().try_get_matches_from(arguments).unwrap();
        assert_eq!(
            secrets_on_the_command_line(&matches),
            ["--api-key", "--token-secret"]
        );
        let matches = Cli::command()
            .try_get_matches_from(["batond", "server", "--allow-unauthenticated"])
            .unwrap();
        assert!(secrets_on_the_command_line(&matches).is_empty());
    }

    #[test]
    fn flags_after_the_role_set_each_group() {
        let (a, b) = ("a".repeat(32), "b".repeat(32));
        let keys = format!("{a},{b}");
        let cli = Cli::try_parse_from([
            "batond",
            "server",
            "--api-key",
            &keys,
            "--submits-per-minute",
            "0",
            "--stream-max-chunks",
            "7",
            "--model-attempts",
            "2",
            "--commit-timeout-secs",
            "9",
            "--retry-initial-ms",
            "50",
            "--retry-max-ms",
            "1500",
            "--task-queue",
            "q",
            "--log-cache-runs",
            "8",
            "--log-cache-mib",
            "3",
        ])
        .unwrap();
        let bounds = cli.memory.log_cache();
        assert_eq!((bounds.runs, bounds.bytes), (8, 3 << 20));
        assert_eq!(cli.auth.api_keys, [a, b]);
        assert_eq!(cli.temporal.task_queue, "q");
        let policy = cli.activities.policy();
        assert_eq!(policy.model_attempts, 2);
        assert_eq!(policy.commit_timeout, std::time::Duration::from_secs(9));
        assert_eq!(policy.retry_initial_interval.as_millis(), 50);
        assert_eq!(policy.retry_maximum_interval.as_millis(), 1500);
        assert_eq!(
            policy.commit_attempts,
            ActivityPolicy::default().commit_attempts
        );
        let options = cli.server_options().unwrap();
        assert_eq!(options.submits_per_minute, None);
        assert_eq!(options.stream_max_chunks, 7);
    }

    #[test]
    fn callbacks_go_to_listed_hosts_only_loopback_in_dev_and_retry_with_a_bound() {
        use baton_worker::ops::CallbackHosts;
        let parse = |args: &[&str]| Cli::try_parse_from(args).unwrap();
        let server = parse(&["batond", "server", "--allow-unauthenticated"]);
        let options = server.server_options().unwrap();
        assert_eq!(options.callback_hosts, CallbackHosts::default());
        let dev = parse(&["batond", "dev", "--allow-unauthenticated"]);
        let options = dev.server_options().unwrap();
        assert_eq!(options.callback_hosts, CallbackHosts::loopback());
        let listed = parse(&[
            "batond",
            "dev",
            "--allow-unauthenticated",
            "--callback-hosts",
            "consumer.internal,hooks.example:8443",
        ]);
        let hosts = listed.server_options().unwrap().callback_hosts;
        assert!(hosts.allows("https://hooks.example:8443/cb"));
        assert!(
            !hosts.allows("http://127.0.0.1/cb"),
            "a list replaces dev's loopback"
        );
        let bad = parse(&[
            "batond",
            "server",
            "--allow-unauthenticated",
            "--callback-hosts",
            "http://consumer/",
        ]);
        assert!(bad.server_options().is_err());

        let sweep = dev.mount.callback_sweep().unwrap();
        assert_eq!(sweep.max_attempts, 20);
        assert_eq!(sweep.retry_max, std::time::Duration::from_secs(300));
        let bounded = parse(&[
            "batond",
            "worker",
            "--callback-retry-max-ms",
            "1000",
            "--callback-max-attempts",
            "3",
        ]);
        let sweep = bounded.mount.callback_sweep().unwrap();
        assert_eq!((sweep.max_attempts, sweep.retry_max.as_millis()), (3, 1000));
        assert!(Cli::try_parse_from(["batond", "worker", "--callback-max-attempts", "0"]).is_err());
    }
}

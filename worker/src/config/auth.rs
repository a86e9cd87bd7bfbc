//! Flags of the auth group: operator keys, session tokens, or explicitly none. Secrets are
//! checked before the server serves: no operator key and no token secret under 32 bytes. The
//! variables are the recommended way to give them (a flag shows in `ps`).

use baton_worker::auth::{
    Auth, BuiltinAuth, DEFAULT_TOKEN_TTL, MIN_TOKEN_SECRET_BYTES, UNNAMED_OPERATOR,
};
use clap::{ArgMatches, Args, parser::ValueSource};

/// The shortest operator key `batond` accepts: as long as the token secret, so a key cannot be
/// guessed faster than a token forged.
pub(crate) const MIN_OPERATOR_KEY_BYTES: usize = MIN_TOKEN_SECRET_BYTES;
use std::{sync::Arc, time::Duration};

#[derive(Debug, Args)]
#[command(next_help_heading = "Auth")]
pub(crate) struct AuthArgs {
    /// An operator API key (bearer), at least 32 bytes; repeat for several. Enables built-in auth: `/start` then
    /// answers a session token bound to the new session. Prefer BATON_API_KEYS: a flag shows in
    /// `ps`.
    #[arg(
        long = "api-key",
        env = "BATON_API_KEYS",
        value_delimiter = ',',
        global = true,
        hide_env_values = true
    )]
    pub(crate) api_keys: Vec<String>,
    /// An operator API key with the name the audit log gives its holder: `NAME=KEY` (the name
    /// holds no `=`, the key at least 32 bytes); repeat for several. Keys given by --api-key are named `operator`.
    #[arg(
        long = "named-api-key",
        env = "BATON_NAMED_API_KEYS",
        value_delimiter = ',',
        value_parser = named_key,
        global = true,
        hide_env_values = true
    )]
    pub(crate) named_api_keys: Vec<(String, String)>,
    /// Secret that signs session tokens (servers sharing it accept each other's tokens), at
    /// least 32 bytes (`openssl rand -base64 32`). Without it a random one is made, and tokens
    /// hold on this process only. Prefer BATON_TOKEN_SECRET: a flag shows in `ps`.
    #[arg(
        long,
        env = "BATON_TOKEN_SECRET",
        global = true,
        hide_env_values = true
    )]
    pub(crate) token_secret: Option<String>,
    /// How long a session token is valid, in seconds.
    #[arg(
        long,
        env = "BATON_TOKEN_TTL_SECS",
        default_value_t = DEFAULT_TOKEN_TTL.as_secs(),
        global = true
    )]
    pub(crate) token_ttl_secs: u64,
    /// Serve the HTTP API without authentication (loopback demos, private networks only).
    #[arg(long, env = "BATON_ALLOW_UNAUTHENTICATED", global = true)]
    pub(crate) allow_unauthenticated: bool,
}

impl AuthArgs {
    /// The server's auth from the flags; none given is refused (fail-closed).
    pub(crate) fn auth(&self) -> anyhow::Result<Auth> {
        if self.api_keys.is_empty() && self.named_api_keys.is_empty() {
            if self.allow_unauthenticated {
                return Ok(Auth::AllowUnauthenticated);
            }
            anyhow::bail!(
                "refusing to serve without authentication: give operator keys (--api-key or \
                 BATON_API_KEYS) or pass --allow-unauthenticated"
            );
        }
        if self.api_keys.iter().any(|key| key.trim().is_empty()) {
            anyhow::bail!(
                "an operator key is empty (--api-key '' or an empty item in BATON_API_KEYS): \
                 refusing a key anyone can send"
            );
        }
        let keys = self.api_keys.iter().map(|key| ("--api-key", key));
        let named = self
            .named_api_keys
            .iter()
            .map(|(_, key)| ("--named-api-key", key));
        if let Some((flag, key)) = keys
            .chain(named)
            .find(|(_, key)| key.len() < MIN_OPERATOR_KEY_BYTES)
        {
            // The length, never the key: the error goes to the terminal and the logs.
            anyhow::bail!(
                "an operator key ({flag}) is {} bytes; it must be at least \
                 {MIN_OPERATOR_KEY_BYTES} (make one with `openssl rand -base64 32`)",
                key.len()
            );
        }
        let secret = match &self.token_secret {
            Some(secret) if secret.len() < MIN_TOKEN_SECRET_BYTES => anyhow::bail!(
                "the token secret is {} bytes; it must be at least {MIN_TOKEN_SECRET_BYTES} \
                 (make one with `openssl rand -base64 32`)",
                secret.len()
            ),
            Some(secret) => secret.as_bytes().to_vec(),
            None => {
                tracing::warn!("no --token-secret: session tokens hold on this process only");
                let mut secret = vec![0u8; 32];
                ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret)
                    .map_err(|_| anyhow::anyhow!("no system randomness for the token secret"))?;
                secret
            }
        };
        let keys = self
            .api_keys
            .iter()
            .map(|key| (UNNAMED_OPERATOR.to_owned(), key.clone()))
            .chain(self.named_api_keys.iter().cloned())
            .collect();
        Ok(Auth::Builtin(Arc::new(BuiltinAuth::with_named_keys(
            keys,
            &secret,
            Duration::from_secs(self.token_ttl_secs),
        ))))
    }
}

/// The secret flags given on the command line rather than in their variables, which `ps` shows
/// to every user of the machine: `batond` warns about each.
pub(crate) fn secrets_on_the_command_line(matches: &ArgMatches) -> Vec<&'static str> {
    [
        ("api_keys", "--api-key"),
        ("named_api_keys", "--named-api-key"),
        ("token_secret", "--token-secret"),
        ("service_keys", "--service-key"),
    ]
    .into_iter()
    .filter(|(id, _)| matches.value_source(id) == Some(ValueSource::CommandLine))
    .map(|(_, flag)| flag)
    .collect()
}

/// A `NAME=KEY` of --named-api-key.
fn named_key(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, key)) if !name.is_empty() && !key.is_empty() => {
            Ok((name.to_owned(), key.to_owned()))
        }
        _ => Err("expected NAME=KEY".to_owned()),
    }
}

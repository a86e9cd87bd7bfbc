//! Real model adapters for Baton: OpenAI-compatible Chat Completions ([`OpenAi`]) and Anthropic
//! Messages ([`Anthropic`]), both streamed over HTTP, plus [`ProviderModels`], which builds them
//! from the provider-neutral [`ModelConfig`] that `baton-core` parses.
//!
//! Both adapters send text deltas as they arrive, assemble tool calls from their streamed
//! argument fragments (validated as JSON at the end), report usage with cache tokens, and fail
//! with a typed [`baton_core::model::Error`] whose kind says whether a retry may help. Nothing
//! here reads the environment: the API key comes in as a value.

pub mod anthropic;
mod conversation;
mod http;
pub mod openai;
pub mod replay;
pub mod wire;

pub use anthropic::Anthropic;
pub use baton_core::config::{ModelConfig, Provider};
pub use baton_wire::sse;
pub use http::StreamState;
pub use openai::OpenAi;
pub use wire::{HttpModel, WireFormat};

use baton_core::{
    Model,
    config::ModelBuilder,
    model::{Delta, Error, ErrorKind, ModelTurn},
};
use std::{fmt, sync::Arc, time::Duration};
use tokio::sync::mpsc;

/// Wait for a response head, and for each later read of the stream, when the configuration sets
/// none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// An API key. Its `Debug` shows no part of it, and the adapters scrub it from any error
/// message that echoes it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The header value carrying the key, marked sensitive so HTTP logging leaves it out.
    fn header_value(&self, value: &str) -> Result<reqwest::header::HeaderValue, Error> {
        let mut value = reqwest::header::HeaderValue::from_str(value).map_err(|_| {
            Error::permanent("the API key has characters an HTTP header cannot carry")
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(redacted)")
    }
}

/// Everything an adapter needs: the configuration, with the key it names resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    pub model: String,
    pub base_url: Option<String>,
    pub api_key: Option<ApiKey>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub timeout: Duration,
}

impl Settings {
    pub fn new(config: &ModelConfig, api_key: Option<ApiKey>) -> Self {
        Self {
            model: config.model.clone(),
            base_url: config.base_url.clone(),
            api_key,
            temperature: config.temperature,
            max_tokens: config.max_tokens,
            timeout: config.timeout.unwrap_or(DEFAULT_TIMEOUT),
        }
    }
}

/// The adapter for `config`, with `api_key` (the value of the variable it names, if any).
pub fn build(config: &ModelConfig, api_key: Option<ApiKey>) -> Result<Arc<dyn Model>, Error> {
    let settings = Settings::new(config, api_key);
    Ok(match config.provider {
        Provider::OpenAi => Arc::new(OpenAi::new(settings)?),
        Provider::Anthropic => Arc::new(Anthropic::new(settings)?),
    })
}

/// Builds provider models for an agents file or a command line. `lookup` resolves the
/// `api_key_env` a configuration names (the binary passes `std::env::var`); a named variable
/// that is not set refuses the configuration.
pub struct ProviderModels<F> {
    lookup: F,
}

impl<F: Fn(&str) -> Option<String>> ProviderModels<F> {
    pub fn new(lookup: F) -> Self {
        Self { lookup }
    }
}

impl<F: Fn(&str) -> Option<String>> ModelBuilder for ProviderModels<F> {
    fn build(&self, config: &ModelConfig) -> Result<Arc<dyn Model>, String> {
        let api_key = match &config.api_key_env {
            Some(name) => Some(ApiKey::new((self.lookup)(name).ok_or_else(|| {
                format!(
                    "the environment variable {name} (api_key_env of model {:?}) is not set",
                    config.model
                )
            })?)),
            None => None,
        };
        build(config, api_key).map_err(|e| e.message)
    }

    fn secret(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
    }
}

/// Decodes a recorded response body (the bytes after the HTTP head) read in `pieces`, exactly
/// as the adapter of `provider` decodes a live stream, without HTTP: for the benchmark and for
/// checking a recording offline.
pub fn decode_body<'a>(
    provider: Provider,
    pieces: impl IntoIterator<Item = &'a [u8]>,
    deltas: &mpsc::UnboundedSender<Delta>,
) -> Result<ModelTurn, Error> {
    fn decode<'a, S: StreamState>(
        state: S,
        pieces: impl IntoIterator<Item = &'a [u8]>,
        deltas: &mpsc::UnboundedSender<Delta>,
    ) -> Result<ModelTurn, Error> {
        let mut body = http::BodyDecoder::new(state);
        for piece in pieces {
            if body.feed(piece, deltas)? {
                break;
            }
        }
        body.finish()
    }
    match provider {
        Provider::OpenAi => decode(openai::OpenAiStream::default(), pieces, deltas),
        Provider::Anthropic => decode(anthropic::AnthropicStream::default(), pieces, deltas),
    }
}

fn endpoint(
    settings: &Settings,
    url: String,
    mut headers: reqwest::header::HeaderMap,
) -> Result<http::Endpoint, Error> {
    use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let client = reqwest::Client::builder()
        .connect_timeout(settings.timeout)
        .build()
        .map_err(|e| {
            Error::new(
                ErrorKind::Failed,
                format!("cannot make an HTTP client: {e}"),
            )
        })?;
    Ok(http::Endpoint {
        client,
        url,
        headers,
        timeout: settings.timeout,
        api_key: settings.api_key.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_resolved_by_the_caller_and_never_shown() {
        let key = ApiKey::new("sk-secret-123");
        let settings = Settings::new(
            &ModelConfig::new(Provider::OpenAi, "gpt-4o-mini"),
            Some(key.clone()),
        );
        let shown = format!("{settings:?} {:?}", OpenAi::new(settings.clone()).unwrap());
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("ApiKey(redacted)"));

        let models = ProviderModels::new(|name| (name == "SET").then(|| "k".to_owned()));
        let mut config = ModelConfig::new(Provider::Anthropic, "claude");
        config.api_key_env = Some("UNSET".into());
        let refused = models.build(&config).err().unwrap();
        assert_eq!(
            refused,
            "the environment variable UNSET (api_key_env of model \"claude\") is not set"
        );
        config.api_key_env = Some("SET".into());
        assert_eq!(models.build(&config).unwrap().name(), "claude");
        config.api_key_env = None;
        assert_eq!(models.build(&config).unwrap().name(), "claude");
    }
}

//! A real model, described without building it, and the builder the binary passes to make it.

use crate::Model;
use serde::Deserialize;
use std::{fmt, str::FromStr, sync::Arc, time::Duration};

/// A model provider Baton has an adapter for (in the `baton-models` crate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Provider {
    /// OpenAI Chat Completions, or any server that speaks it (vLLM, Ollama, llama.cpp, LM Studio).
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic Messages.
    #[serde(rename = "anthropic")]
    Anthropic,
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OpenAi => "openai",
            Self::Anthropic => "anthropic",
        })
    }
}

/// A real model, described without building it: `core` knows no HTTP adapter, so whoever loads
/// agents passes a [`ModelBuilder`] that makes the model from this description.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub provider: Provider,
    /// The provider's model name, e.g. `gpt-4o-mini` or `claude-sonnet-4-5`.
    pub model: String,
    /// Where the API is; `None` means the provider's hosted API.
    pub base_url: Option<String>,
    /// The NAME of the environment variable that holds the API key (the key itself is never in
    /// a configuration). `None` sends no key, as local servers want.
    pub api_key_env: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Bound on the wait for the response head and for each later read of the stream.
    pub timeout: Option<Duration>,
}

impl ModelConfig {
    pub fn new(provider: Provider, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            base_url: None,
            api_key_env: None,
            temperature: None,
            max_tokens: None,
            timeout: None,
        }
    }
}

/// `provider:model`, e.g. `openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`, as a command
/// line names a model.
impl FromStr for ModelConfig {
    type Err = String;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let (provider, model) = spec
            .split_once(':')
            .filter(|(_, model)| !model.is_empty())
            .ok_or_else(|| format!("{spec:?} is not provider:model (e.g. openai:gpt-4o-mini)"))?;
        let provider = match provider {
            "openai" => Provider::OpenAi,
            "anthropic" => Provider::Anthropic,
            other => {
                return Err(format!(
                    "unknown model provider {other:?}; known: openai, anthropic"
                ));
            }
        };
        Ok(Self::new(provider, model))
    }
}

/// Makes the model a [`ModelConfig`] describes. The binary provides it (it alone may read the
/// API key from the environment); the error says what is wrong, for people.
pub trait ModelBuilder {
    fn build(&self, config: &ModelConfig) -> Result<Arc<dyn Model>, String>;

    /// The value of the secret an agents file names (e.g. a remote sub-agent's `bearer_env`),
    /// which only a binary reads; `None` when it is not set (the default: no secrets).
    fn secret(&self, _name: &str) -> Option<String> {
        None
    }
}

/// A [`ModelBuilder`] that has no provider: files with only scripted models load with it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScriptedOnly;

impl ModelBuilder for ScriptedOnly {
    fn build(&self, config: &ModelConfig) -> Result<Arc<dyn Model>, String> {
        Err(format!(
            "model kind {:?} needs a model builder; this loader knows only scripted models",
            config.provider.to_string()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_names_a_model_as_provider_colon_model() {
        assert_eq!(
            "openai:gpt-4o-mini".parse::<ModelConfig>(),
            Ok(ModelConfig::new(Provider::OpenAi, "gpt-4o-mini"))
        );
        assert_eq!(
            "anthropic:claude-3-5-haiku-latest"
                .parse::<ModelConfig>()
                .unwrap()
                .provider,
            Provider::Anthropic
        );
        assert!("gpt-4o".parse::<ModelConfig>().is_err());
        assert!("openai:".parse::<ModelConfig>().is_err());
        assert!(
            "mistral:large"
                .parse::<ModelConfig>()
                .unwrap_err()
                .contains("unknown model provider")
        );
    }
}

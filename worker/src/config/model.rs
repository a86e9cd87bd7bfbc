//! Flags of the agents-and-model group: the agents file, and a real model for the demo agents.

use anyhow::Context;
use baton_core::{
    AgentRegistry, Model,
    config::{
        ModelBuilder, ModelConfig, MountConfig, Provider, agents_from_toml_with_toolsets,
        allowed_origins_from_toml, mounts_from_toml,
    },
};
use baton_models::ProviderModels;
use baton_worker::demo;
use clap::Args;
use std::{path::PathBuf, sync::Arc};

#[derive(Debug, Args)]
#[command(next_help_heading = "Agents and model")]
pub(crate) struct ModelArgs {
    /// A TOML file of agents to serve beside the built-in ones (see the README).
    #[arg(long, env = "BATON_AGENTS_FILE", global = true)]
    pub(crate) agents: Option<PathBuf>,
    /// Run the demo agents on a real model instead of their script: `provider:model`, e.g.
    /// `openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`.
    #[arg(long, env = "BATON_MODEL", global = true)]
    pub(crate) model: Option<ModelConfig>,
    /// Base URL of the `--model` API, e.g. `http://127.0.0.1:11434/v1` for a local Ollama;
    /// default the provider's hosted API.
    #[arg(long, env = "BATON_MODEL_BASE_URL", global = true, requires = "model")]
    pub(crate) model_base_url: Option<String>,
    /// NAME of the environment variable holding the `--model` API key. Default for the hosted
    /// APIs: OPENAI_API_KEY or ANTHROPIC_API_KEY; with --model-base-url: none (no key sent).
    #[arg(
        long,
        env = "BATON_MODEL_API_KEY_ENV",
        global = true,
        requires = "model"
    )]
    pub(crate) model_api_key_env: Option<String>,
}

impl ModelArgs {
    /// The built-in agents (on `--model` if given), plus those of the agents file if one is
    /// given. A bad file, or a model whose key variable is not set, stops the start with the
    /// reason.
    pub(crate) async fn registry(&self) -> anyhow::Result<AgentRegistry> {
        // The only place API keys are read: from the variables the configuration names.
        let models = ProviderModels::new(|name| std::env::var(name).ok());
        let mut agents = match self.demo_model() {
            None => demo::default_agents(),
            Some(config) => {
                let model: Arc<dyn Model> = models
                    .build(&config)
                    .map_err(|e| anyhow::anyhow!("--model: {e}"))?;
                tracing::info!(provider = %config.provider, model = %config.model, "demo agents use a real model");
                // The sub-agent demo stays scripted: its script asks the user in a child.
                let mut agents = vec![
                    demo::demo_agent_with(model.clone()),
                    demo::demo_hitl_agent_with(model),
                ];
                agents.extend(demo::demo_tree_agents());
                agents
            }
        };
        if let Some(path) = &self.agents {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the agents file {}", path.display()))?;
            let (catalogue, toolsets) = with_mcp_tools(demo::tool_catalogue(), &text)
                .await
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            let declared = agents_from_toml_with_toolsets(&text, &catalogue, &toolsets, &models)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            tracing::info!(count = declared.len(), file = %path.display(), "agents loaded");
            agents.extend(declared);
        }
        AgentRegistry::new(agents).map_err(|e| anyhow::anyhow!("agents: {e}"))
    }

    /// The producer mounts the agents file declares (none without a file).
    pub(crate) fn declared_mounts(&self) -> anyhow::Result<Vec<MountConfig>> {
        self.read_agents_file(mounts_from_toml)
    }

    /// The browser origins the agents file allows (`[browser] allowed_origins`; none without a
    /// file).
    pub(crate) fn declared_origins(&self) -> anyhow::Result<Vec<String>> {
        self.read_agents_file(allowed_origins_from_toml)
    }

    /// What `read` finds in the agents file, or its default without a file.
    fn read_agents_file<T: Default>(
        &self,
        read: impl Fn(&str) -> Result<T, baton_core::config::ConfigError>,
    ) -> anyhow::Result<T> {
        let Some(path) = &self.agents else {
            return Ok(T::default());
        };
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the agents file {}", path.display()))?;
        read(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// The `--model` configuration, with the conventional key variable of a hosted API.
    fn demo_model(&self) -> Option<ModelConfig> {
        let mut config = self.model.clone()?;
        config.base_url = self.model_base_url.clone();
        config.api_key_env = self.model_api_key_env.clone().or_else(|| {
            let hosted = config.base_url.is_none();
            hosted.then(|| match config.provider {
                Provider::OpenAi => "OPENAI_API_KEY".to_owned(),
                Provider::Anthropic => "ANTHROPIC_API_KEY".to_owned(),
            })
        });
        Some(config)
    }
}

/// `catalogue` with the tools of every MCP server the agents file declares, and each server's
/// toolset (for an agent's `mcp_servers`), sharing its one connection: each server is connected
/// to (its process started) and its tools listed now, so one that does not answer, a tool named
/// in its `tools` that it does not list, or a tool named like a catalogue tool, stops the start
/// with the reason.
async fn with_mcp_tools(
    mut catalogue: baton_core::config::ToolCatalogue,
    text: &str,
) -> anyhow::Result<(
    baton_core::config::ToolCatalogue,
    baton_core::config::Toolsets,
)> {
    let mut toolsets = baton_core::config::Toolsets::new();
    for config in baton_core::config::mcp_servers_from_toml(text)? {
        let server = baton_mcp::McpServer::from_config(&config);
        let at_line = |e: baton_mcp::McpError| anyhow::anyhow!("line {}: {e}", config.line);
        let toolset = baton_mcp::toolset(server).await.map_err(at_line)?;
        toolset.check_all_listed().map_err(at_line)?;
        let tools = baton_core::tool::Toolset::current(&toolset);
        for (name, tool) in tools.iter() {
            if catalogue.contains_key(name) {
                anyhow::bail!(
                    "line {}: MCP server {:?} lists a tool {name:?}, a name the catalogue has \
                     already; rename it (rename = {{ {name} = \"…\" }})",
                    config.line,
                    config.name
                );
            }
            catalogue.insert(name.clone(), tool.clone());
        }
        tracing::info!(server = %config.name, tools = tools.len(), "MCP server's tools listed");
        toolsets.insert(config.name.clone(), std::sync::Arc::new(toolset));
    }
    Ok((catalogue, toolsets))
}

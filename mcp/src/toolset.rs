//! An MCP server's tools as a [`Toolset`]: every tool its declaration selects, as the server
//! lists them, listed again before the next step once the server says they changed
//! (`notifications/tools/list_changed`, on a `subscriptions/listen` stream at 2026-07-28) or
//! was started again. A tool the list dropped is not offered any more, but a call the model
//! made before still reaches the server; a list that cannot be read keeps the last one (and is
//! tried again at the next step).

use crate::{Connection, McpError, McpServer, McpTool, check_listed, selected};
use baton_core::tool::{ServerTool, Toolset, toolset::Tools};
use std::sync::{Arc, PoisonError, RwLock};

/// An MCP server's tools that follow its list (see the module).
pub struct McpToolset {
    connection: Arc<Connection>,
    /// The tools offered now.
    current: RwLock<Arc<Tools>>,
    /// Every tool offered since the start, by name (the latest of each).
    ever: RwLock<Tools>,
    /// The names of every tool the server listed at the start, selected or not.
    listed_at_start: Vec<String>,
}

impl std::fmt::Debug for McpToolset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolset")
            .field("server", &self.connection.server().name)
            .field("tools", &self.current().keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Connects to `server` (starting its process) and lists its tools: the toolset of those its
/// declaration selects. A server that does not answer is the error [`crate::tools`] gives; a
/// tool named in `only` that it does not list yet is offered once it does (and logged now).
pub async fn toolset(server: McpServer) -> Result<McpToolset, McpError> {
    let connection = Arc::new(Connection::new(server));
    let listed = connection.list_tools().await?;
    let listed_at_start: Vec<String> = listed.iter().map(|tool| tool.name.clone()).collect();
    if let Err(error) = check_listed(connection.server(), &listed_at_start) {
        tracing::warn!(%error, "a tool the declaration names is offered once the server lists it");
    }
    // Any change the server announced while it was being listed is read at the first step.
    let tools = by_name(selected(&connection, listed)?);
    Ok(McpToolset {
        connection,
        ever: RwLock::new(tools.clone()),
        current: RwLock::new(Arc::new(tools)),
        listed_at_start,
    })
}

impl McpToolset {
    /// Refuses a toolset that does not list every tool its declaration's `only` names (as
    /// [`crate::tools`] refuses it at load), for a declaration that must not wait for them.
    pub fn check_all_listed(&self) -> Result<(), McpError> {
        check_listed(self.connection.server(), &self.listed_at_start)
    }
}

fn by_name(tools: Vec<McpTool>) -> Tools {
    tools
        .into_iter()
        .map(|tool| {
            let tool: Arc<dyn ServerTool> = Arc::new(tool);
            (tool.spec().name.clone(), tool)
        })
        .collect()
}

#[async_trait::async_trait]
impl Toolset for McpToolset {
    fn name(&self) -> &str {
        &self.connection.server().name
    }

    fn current(&self) -> Arc<Tools> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn tool(&self, name: &str) -> Option<Arc<dyn ServerTool>> {
        self.ever
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    async fn refresh(&self) {
        if !self.connection.take_changed() {
            return;
        }
        let server = &self.connection.server().name;
        let listed = self
            .connection
            .list_tools()
            .await
            .and_then(|listed| selected(&self.connection, listed));
        let tools = match listed {
            Ok(tools) => by_name(tools),
            Err(error) => {
                tracing::warn!(%server, %error, "the MCP server's changed tools could not be listed; the last list stands");
                self.connection.mark_changed();
                return;
            }
        };
        let names: Vec<&String> = tools.keys().collect();
        tracing::info!(%server, tools = ?names, "the MCP server's tools changed; the next step offers these");
        self.ever
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(
                tools
                    .iter()
                    .map(|(name, tool)| (name.clone(), tool.clone())),
            );
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(tools);
    }
}

//! A set of server tools that can change while the worker runs: an MCP server's, which says
//! when its list changed. An agent offers a toolset's current tools at each step, read again
//! before the step when they changed, never during one: a call the model made keeps finding its
//! tool even if the list dropped it since.

use super::ServerTool;
use async_trait::async_trait;
use std::{collections::BTreeMap, sync::Arc};

/// The tools of a toolset, by the name the model knows each by.
pub type Tools = BTreeMap<String, Arc<dyn ServerTool>>;

/// A set of server tools that can change (see the module).
#[async_trait]
pub trait Toolset: Send + Sync {
    /// Its name, in logs and errors.
    fn name(&self) -> &str;

    /// The tools it offers now.
    fn current(&self) -> Arc<Tools>;

    /// The tool named `name`: one offered now, or one offered before.
    fn tool(&self, name: &str) -> Option<Arc<dyn ServerTool>>;

    /// Reads the list again if it has changed since it was last read (a step calls this before
    /// it reads the tools it offers). A list that cannot be read leaves the last one.
    async fn refresh(&self);
}

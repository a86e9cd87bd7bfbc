//! The server tools an agents file may name, and a catalogue tool as one agent of the file uses
//! it (gated by approval or ending the run as the file says).

use crate::{ServerTool, ToolExecution, ToolSpec, message::ToolError, tool::ToolContext};
use async_trait::async_trait;
use serde_json::Value;
use std::{collections::BTreeMap, sync::Arc};

/// Server tools a configuration may reference, by name.
pub type ToolCatalogue = BTreeMap<String, Arc<dyn ServerTool>>;

/// A catalogue tool as an agent of the file uses it (possibly gated by approval, possibly
/// ending the run).
pub(super) struct Catalogued {
    pub(super) tool: Arc<dyn ServerTool>,
    pub(super) requires_approval: bool,
    pub(super) finishes_run: bool,
}

#[async_trait]
impl ServerTool for Catalogued {
    fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    fn execution(&self) -> ToolExecution {
        self.tool.execution()
    }

    fn requires_approval(&self) -> bool {
        self.requires_approval
    }

    fn finishes_run(&self) -> bool {
        self.finishes_run
    }

    fn at_most_once(&self) -> bool {
        self.tool.at_most_once()
    }

    fn check_input(&self, input: &Value) -> Result<(), ToolError> {
        self.tool.check_input(input)
    }

    async fn call(&self, context: &ToolContext, input: Value) -> Result<Value, ToolError> {
        self.tool.call(context, input).await
    }
}

//! A scripted model that records what each of its calls was given: the messages and the names
//! of the tools offered, for tests of what a step sends the model.

use baton_core::{
    Message,
    model::{self, Delta, Model, ModelRequest, ModelTurn},
    scripted::ScriptedModel,
};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// What one model call was given.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub messages: Vec<Message>,
    pub tools: Vec<String>,
}

/// A model answering from its script, recording each call (see the module).
pub struct RecordingModel {
    script: ScriptedModel,
    calls: Arc<Mutex<Vec<Recorded>>>,
}

impl RecordingModel {
    /// The model, and what its calls were given so far.
    pub fn new(script: ScriptedModel) -> (Self, Arc<Mutex<Vec<Recorded>>>) {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let model = Self {
            script,
            calls: calls.clone(),
        };
        (model, calls)
    }
}

#[async_trait::async_trait]
impl Model for RecordingModel {
    fn name(&self) -> &str {
        "recording"
    }

    async fn generate(
        &self,
        request: ModelRequest<'_>,
        deltas: mpsc::UnboundedSender<Delta>,
    ) -> Result<ModelTurn, model::Error> {
        let recorded = Recorded {
            messages: request.messages.to_vec(),
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
        };
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(recorded);
        self.script.generate(request, deltas).await
    }
}

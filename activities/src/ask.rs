//! The worker's [`Asker`]: a running tool call's question stored with its chunk, then the call
//! waits for the answer, polling the root's questions hash, until its window ends. The question
//! is closed however the wait ends (answered, timed out, or the call dropped it), so no answer is
//! stored after the call stopped reading.

use baton_core::{
    store::{Closing, Error as StoreError, Question, SessionAddress, StepRef, Store, Written},
    tool::{
        ToolContext,
        ask::{Ask, AskError, Asker, PersonAnswer},
    },
};
use std::time::Duration;

/// How often a waiting call reads whether its question was answered.
const POLL_EVERY: Duration = Duration::from_millis(200);

/// Asks for the calls of one step (see the module).
#[derive(Clone)]
pub(crate) struct StoreAsker {
    store: Store,
    address: SessionAddress,
    stream_id: String,
    run_id: String,
    step: u32,
}

impl StoreAsker {
    pub(crate) fn new(store: Store, step: StepRef<'_>) -> Self {
        Self {
            store,
            address: step.address.clone(),
            stream_id: step.stream_id.to_owned(),
            run_id: step.run_id.to_owned(),
            step: step.step,
        }
    }

    fn step(&self) -> StepRef<'_> {
        StepRef {
            address: &self.address,
            stream_id: &self.stream_id,
            run_id: &self.run_id,
            step: self.step,
        }
    }

    /// Waits for the answer to `question` until its deadline, then closes it.
    async fn wait(&self, question: &Question, window: Duration) -> Result<PersonAnswer, AskError> {
        let deadline = tokio::time::Instant::now() + window;
        loop {
            let answered = self
                .store
                .question_answer(&self.address, &question.question_id)
                .await
                .map_err(store_error)?;
            if answered.is_some() {
                // The close hands back the answer it removed with the question.
                let closed = self.close(question, Closing::Withdrawn).await?;
                return closed.ok_or(AskError::RunEnded);
            }
            if tokio::time::Instant::now() >= deadline {
                // An answer stored just before the close still counts.
                return self
                    .close(question, Closing::TimedOut)
                    .await?
                    .ok_or(AskError::TimedOut(window));
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    async fn close(
        &self,
        question: &Question,
        closing: Closing,
    ) -> Result<Option<PersonAnswer>, AskError> {
        self.store
            .close_question(self.step(), &question.question_id, closing)
            .await
            .map_err(store_error)
    }
}

#[async_trait::async_trait]
impl Asker for StoreAsker {
    async fn ask(
        &self,
        context: &ToolContext,
        tool_name: &str,
        ask: Ask,
    ) -> Result<PersonAnswer, AskError> {
        let now = baton_core::store::now_ms();
        let window_ms = u64::try_from(ask.window.as_millis()).unwrap_or(u64::MAX);
        let question = Question {
            question_id: baton_core::tool::ask::new_question_id(),
            session_id: self.address.session_id.clone(),
            run_id: self.run_id.clone(),
            step: self.step,
            tool_call_id: context.tool_call_id().to_owned(),
            tool_name: tool_name.to_owned(),
            message: ask.message,
            schema: ask.schema,
            asked_at: now,
            deadline_at: now.saturating_add(window_ms),
        };
        match self.store.ask_question(self.step(), &question).await {
            Ok(Written::New) => {}
            Ok(Written::AlreadyDone) | Err(StoreError::RunRefused { .. }) => {
                return Err(AskError::RunEnded);
            }
            Err(error) => return Err(store_error(error)),
        }
        tracing::info!(
            event = "question_asked",
            session_id = %self.address.session_id,
            run_id = %self.run_id,
            tool_call_id = context.tool_call_id(),
            question_id = %question.question_id,
            tool = tool_name,
            "a tool call asks a person"
        );
        // Dropped mid-wait (the call ended first), the question is closed all the same.
        let mut guard = CloseOnDrop {
            asker: self.clone(),
            question_id: Some(question.question_id.clone()),
        };
        let answer = self.wait(&question, ask.window).await;
        guard.question_id = None;
        tracing::info!(
            event = "question_closed",
            session_id = %self.address.session_id,
            question_id = %question.question_id,
            answer = match &answer {
                Ok(answer) => answer.action(),
                Err(AskError::TimedOut(_)) => "timed_out",
                Err(_) => "none",
            },
            "a tool call's question is closed"
        );
        answer
    }
}

/// Closes a question whose wait was dropped (see [`StoreAsker::ask`]).
struct CloseOnDrop {
    asker: StoreAsker,
    question_id: Option<String>,
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        let Some(question_id) = self.question_id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let asker = self.asker.clone();
        runtime.spawn(async move {
            if let Err(error) = asker
                .store
                .close_question(asker.step(), &question_id, Closing::Withdrawn)
                .await
            {
                tracing::warn!(%error, question_id, "a dropped question was not closed");
            }
        });
    }
}

fn store_error(error: StoreError) -> AskError {
    AskError::Store(error.to_string())
}

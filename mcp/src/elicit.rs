//! A server's elicitation during a call, asked of a person: the connection's client handler
//! finds the call the request belongs to (the one call in flight on the connection) and asks
//! through its [`ToolContext`], which the worker gives the runtime's asker. The call's own
//! timeout stops while a person is asked; the question's window bounds that wait, and a window
//! that ends unanswered ends the call with a `question_timed_out` tool error (the server is told
//! `cancel`). Outside a run, with several calls in flight, or with no window declared, the
//! request is declined at once: never a hang.

use baton_core::tool::{
    ToolContext,
    ask::{Ask, AskError, PersonAnswer},
};
use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
        ElicitationCapability, FormElicitationCapability, Implementation,
    },
    service::{NotificationContext, RequestContext},
};
use std::{
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

/// One call in flight on a connection: whose it is, and how long it has waited on a person.
pub(crate) struct InFlight {
    context: ToolContext,
    tool_name: String,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    /// Since when a person is being asked, if one is.
    asking_since: Option<Instant>,
    /// How long the call has waited on persons before.
    waited: Duration,
    /// A question's window ended unanswered.
    timed_out: Option<Duration>,
}

impl InFlight {
    pub(crate) fn new(context: ToolContext, tool_name: &str) -> Self {
        Self {
            context,
            tool_name: tool_name.to_owned(),
            held: Mutex::default(),
        }
    }

    /// How long the call has waited on persons (a wait going on counts up to now), or `None`
    /// while one goes on: the call's timeout does not run then.
    pub(crate) fn waited(&self) -> Option<Duration> {
        let held = lock(&self.held);
        match held.asking_since {
            Some(_) => None,
            None => Some(held.waited),
        }
    }

    /// The window of a question that ended unanswered during the call, if one did.
    pub(crate) fn timed_out(&self) -> Option<Duration> {
        lock(&self.held).timed_out
    }
}

/// The calls in flight on one connection.
pub(crate) type Calls = Arc<Mutex<Vec<Arc<InFlight>>>>;

/// Takes `call` off `calls` when dropped.
pub(crate) struct Registered {
    calls: Calls,
    call: Arc<InFlight>,
}

impl Registered {
    pub(crate) fn new(calls: &Calls, call: InFlight) -> Self {
        let call = Arc::new(call);
        lock(calls).push(call.clone());
        Self {
            calls: calls.clone(),
            call,
        }
    }

    pub(crate) fn call(&self) -> &InFlight {
        &self.call
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.calls).retain(|call| !Arc::ptr_eq(call, &self.call));
    }
}

/// The connection's client handler (see the module).
#[derive(Clone)]
pub(crate) struct Elicitations {
    pub(crate) calls: Calls,
    /// How long a person may take; zero declines every request.
    pub(crate) window: Duration,
    pub(crate) server: String,
    /// Set when the server says its tools changed (an older protocol's notification).
    pub(crate) tools_changed: Arc<std::sync::atomic::AtomicBool>,
}

impl Elicitations {
    /// Asks `request` of a person for `call`, held: the call's own timeout stops meanwhile and
    /// the question's window bounds the wait. A request that is no form is declined.
    pub(crate) async fn ask_held(
        &self,
        call: &InFlight,
        request: ElicitRequestParams,
    ) -> ElicitResult {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            return ElicitResult::new(ElicitationAction::Decline);
        };
        if self.window.is_zero() {
            return ElicitResult::new(ElicitationAction::Decline);
        }
        let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
        lock(&call.held).asking_since = Some(Instant::now());
        let ask = Ask {
            message,
            schema,
            window: self.window,
        };
        let answer = call.context.ask_person(&call.tool_name, ask).await;
        {
            let mut held = lock(&call.held);
            if let Some(since) = held.asking_since.take() {
                held.waited += since.elapsed();
            }
            if let Err(AskError::TimedOut(window)) = &answer {
                held.timed_out = Some(*window);
            }
        }
        match answer {
            Ok(answer) => elicit_result(answer),
            Err(AskError::NoPerson) => ElicitResult::new(ElicitationAction::Decline),
            Err(error) => {
                tracing::warn!(server = %self.server, %error, "an elicitation got no answer");
                ElicitResult::new(ElicitationAction::Cancel)
            }
        }
    }
}

/// A person's answer as the server is told it.
pub(crate) fn elicit_result(answer: PersonAnswer) -> ElicitResult {
    match answer {
        PersonAnswer::Accept { content } => {
            ElicitResult::new(ElicitationAction::Accept).with_content(content)
        }
        PersonAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
        PersonAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

impl ClientHandler for Elicitations {
    /// A server's elicitation request during a call (an older protocol's, sent mid-call): asked
    /// for the one call in flight, else declined.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let call = {
            let calls = lock(&self.calls);
            match calls.as_slice() {
                [only] => only.clone(),
                _ => return Ok(ElicitResult::new(ElicitationAction::Decline)),
            }
        };
        Ok(self.ask_held(&call, request).await)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tools_changed
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if !self.window.is_zero() {
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new().with_schema_validation(true)),
            );
        }
        ClientConfig::new(
            capabilities,
            Implementation::new("baton", env!("CARGO_PKG_VERSION")),
        )
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

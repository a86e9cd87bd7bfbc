//! The context handed to every server tool call: which session, run and call it serves, the
//! idempotency key a tool passes to the outside world so that a retried call is recognised, and
//! the session's custom state, which the call reads and changes through it.

use super::data::{self, DataError, MAX_TOOL_DATA_BYTES, MAX_TOOL_DATA_ITEMS, ToolData};
use crate::{
    state::{StateError, StateSchema, set_operation},
    store::SessionAddress,
};
use json_patch::{Patch, PatchOperation};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use std::{
    fmt,
    sync::{Arc, Mutex, PoisonError},
};

/// Where one server tool call runs. Built by the worker for each call and passed to
/// [`ServerTool::call`](super::ServerTool::call); a tool reads it through its methods.
///
/// The fields are private on purpose: the context grows (custom session state, later) without
/// breaking the tools that use it.
#[derive(Clone)]
pub struct ToolContext {
    address: SessionAddress,
    run_id: String,
    tool_call_id: String,
    /// Shared by the clones of one call's context, so the runtime sees what the tool changed.
    state: Option<Arc<CallState>>,
    /// What the call emitted for the chat, and the bytes of it; shared by the clones.
    data: Arc<Mutex<(Vec<ToolData>, usize)>>,
    /// Who asks a person for this call, when it runs in a run (see [`Self::ask_person`]).
    asker: Option<Arc<dyn super::ask::Asker>>,
}

/// One call's view of the session's custom state: the state as committed before the step, with
/// the call's own changes so far, and those changes as one patch.
struct CallState {
    schema: Arc<StateSchema>,
    changes: Mutex<CallChanges>,
}

struct CallChanges {
    current: Value,
    operations: Vec<PatchOperation>,
    /// The first change refused: the call's result becomes a tool error and none of its
    /// changes are kept.
    refused: Option<StateError>,
}

impl ToolContext {
    /// The context of call `tool_call_id`, made by run `run_id` of the session at `address`.
    pub fn new(
        address: SessionAddress,
        run_id: impl Into<String>,
        tool_call_id: impl Into<String>,
    ) -> Self {
        Self {
            address,
            run_id: run_id.into(),
            tool_call_id: tool_call_id.into(),
            state: None,
            data: Arc::default(),
            asker: None,
        }
    }

    /// The context with who asks a person for the call (the runtime sets it).
    pub fn with_asker(mut self, asker: Arc<dyn super::ask::Asker>) -> Self {
        self.asker = Some(asker);
        self
    }

    /// Asks a person `ask` for this call of the tool `tool_name` and waits for the answer
    /// within its window: answered through the tree's root under the question's own id, as a
    /// client call is, while the run stays active. Outside a run there is nobody to ask.
    pub async fn ask_person(
        &self,
        tool_name: &str,
        ask: super::ask::Ask,
    ) -> Result<super::ask::PersonAnswer, super::ask::AskError> {
        match &self.asker {
            Some(asker) => asker.ask(self, tool_name, ask).await,
            None => Err(super::ask::AskError::NoPerson),
        }
    }

    /// The context with the session's custom state, as committed before the call's step, for
    /// a tool of an agent that declares one (the runtime sets it).
    pub fn with_state(mut self, schema: Arc<StateSchema>, committed: Value) -> Self {
        self.state = Some(Arc::new(CallState {
            schema,
            changes: Mutex::new(CallChanges {
                current: committed,
                operations: Vec::new(),
                refused: None,
            }),
        }));
        self
    }

    /// The session's custom state as this call sees it: as committed before the step, with the
    /// call's own changes. `None` when the agent declares no state. Other calls of the same step
    /// do not see each other's changes; the step's commit applies them in call order.
    pub fn state(&self) -> Option<Value> {
        let state = self.state.as_ref()?;
        Some(lock(&state.changes).current.clone())
    }

    /// [`Self::state`] decoded as the agent's state type.
    pub fn state_as<T: DeserializeOwned>(&self) -> Result<T, StateError> {
        let state = self.state().ok_or(StateError::NoState)?;
        serde_json::from_value(state).map_err(|e| StateError::NotJson(e.to_string()))
    }

    /// Changes the session's custom state with RFC 6902 operations. They must apply to the
    /// state as this call sees it and leave it matching the schema; if not, nothing changes and
    /// the call's result becomes an `invalid_state_patch` error for the model, whatever the tool
    /// returns, with none of its changes kept. The change is staged with the call's result and
    /// applied with the step's commit, so a retried or discarded step applies it once or never.
    pub fn patch_state(&self, patch: Patch) -> Result<(), StateError> {
        let state = self.state.as_ref().ok_or(StateError::NoState)?;
        let mut changes = lock(&state.changes);
        if let Some(refused) = &changes.refused {
            return Err(refused.clone());
        }
        match state.schema.apply(&changes.current, &patch) {
            Ok(next) => {
                changes.current = next;
                changes.operations.extend(patch.0);
                Ok(())
            }
            Err(error) => {
                changes.refused = Some(error.clone());
                Err(error)
            }
        }
    }

    /// Sets the value at `pointer` (a JSON Pointer such as `/topic`) in the session's custom
    /// state: an `add` operation (see [`Self::patch_state`]).
    pub fn set_state_field(&self, pointer: &str, value: impl Serialize) -> Result<(), StateError> {
        let operation = match set_operation(pointer, value) {
            Ok(operation) => operation,
            Err(error) => {
                if let Some(state) = &self.state {
                    lock(&state.changes).refused = Some(error.clone());
                }
                return Err(error);
            }
        };
        self.patch_state(Patch(vec![operation]))
    }

    /// What the call changed, once it has returned: `Ok(None)` for no change, the patch to
    /// stage with its result, or the refusal that makes its result a tool error.
    pub fn state_changes(&self) -> Result<Option<Patch>, StateError> {
        let Some(state) = &self.state else {
            return Ok(None);
        };
        let changes = lock(&state.changes);
        if let Some(refused) = &changes.refused {
            return Err(refused.clone());
        }
        Ok(Some(Patch(changes.operations.clone())).filter(|patch| !patch.0.is_empty()))
    }

    /// Emits `data` for the chat as a `data-<name>` part the message keeps (a `tool_data`
    /// chunk on the session's stream). It is written with the call's result, whatever the
    /// outcome, exactly once however often the call is retried. A bad or reserved name, or more
    /// than the cap, is refused and nothing of that item is kept.
    pub fn emit_data(&self, name: &str, data: impl Serialize) -> Result<(), DataError> {
        self.push_data(name, data, false)
    }

    /// As [`Self::emit_data`], for a transient part: only `useChat`'s `onData` sees it.
    pub fn emit_transient_data(&self, name: &str, data: impl Serialize) -> Result<(), DataError> {
        self.push_data(name, data, true)
    }

    fn push_data(
        &self,
        name: &str,
        data: impl Serialize,
        transient: bool,
    ) -> Result<(), DataError> {
        data::check_name(name)?;
        let data = serde_json::to_value(data).map_err(|e| DataError::NotJson(e.to_string()))?;
        let size = data.to_string().len();
        let mut emitted = self.data.lock().unwrap_or_else(PoisonError::into_inner);
        if emitted.0.len() >= MAX_TOOL_DATA_ITEMS || emitted.1 + size > MAX_TOOL_DATA_BYTES {
            return Err(DataError::TooMuch);
        }
        emitted.1 += size;
        emitted.0.push(ToolData {
            name: name.to_owned(),
            data,
            transient,
        });
        Ok(())
    }

    /// What the call emitted with [`Self::emit_data`], in order (for the runtime).
    pub fn emitted_data(&self) -> Vec<ToolData> {
        let emitted = self.data.lock().unwrap_or_else(PoisonError::into_inner);
        emitted.0.clone()
    }

    /// The session whose model called the tool.
    pub fn session_id(&self) -> &str {
        &self.address.session_id
    }

    /// The root of the session's tree (the session itself for a top-level session).
    pub fn root_session_id(&self) -> &str {
        &self.address.root_session_id
    }

    /// The session's address in the store.
    pub fn address(&self) -> &SessionAddress {
        &self.address
    }

    /// The run that executes the call. A call approved by a person runs in a later run than the
    /// one that made it, so this is not a stable key: use [`Self::idempotency_key`].
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The tool call id the model gave the call, unique within the session.
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// A key that is the same for every attempt of this call and different for every other call:
    /// `<sessionId>/<toolCallId>`. A tool with side effects passes it to the service it calls
    /// (an `Idempotency-Key` header, a unique column) so that a retried attempt is not applied
    /// twice. Session ids are unique server-wide and a tool call id is unique within its
    /// session, so the pair is unique too.
    pub fn idempotency_key(&self) -> String {
        format!("{}/{}", self.address.session_id, self.tool_call_id)
    }
}

/// The lock of a call's changes; a tool that panicked while holding it left the changes whole
/// (each is made in one assignment), so poisoning is ignored.
fn lock(changes: &Mutex<CallChanges>) -> std::sync::MutexGuard<'_, CallChanges> {
    changes.lock().unwrap_or_else(PoisonError::into_inner)
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("session_id", &self.address.session_id)
            .field("root_session_id", &self.address.root_session_id)
            .field("run_id", &self.run_id)
            .field("tool_call_id", &self.tool_call_id)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_idempotency_key_names_the_session_and_the_call_not_the_run() {
        let address = SessionAddress {
            root_session_id: "root".to_owned(),
            session_id: "child".to_owned(),
        };
        let first = ToolContext::new(address.clone(), "run-1", "call-1");
        let approved_later = ToolContext::new(address.clone(), "run-2", "call-1");
        let other_call = ToolContext::new(address, "run-1", "call-2");
        assert_eq!(first.idempotency_key(), "child/call-1");
        assert_eq!(first.idempotency_key(), approved_later.idempotency_key());
        assert_ne!(first.idempotency_key(), other_call.idempotency_key());
        assert_eq!(
            (first.session_id(), first.root_session_id(), first.run_id()),
            ("child", "root", "run-1")
        );
        assert_eq!(first.tool_call_id(), "call-1");
    }

    #[test]
    fn a_call_changes_its_view_of_the_state_and_a_refused_change_spoils_the_call() {
        use serde_json::json;
        let schema = Arc::new(
            StateSchema::new(
                json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}),
                json!({"n": 0}),
            )
            .unwrap(),
        );
        let address = SessionAddress::root("s");
        let plain = ToolContext::new(address.clone(), "r", "c");
        assert_eq!(plain.state(), None);
        assert_eq!(plain.set_state_field("/n", 1), Err(StateError::NoState));
        assert_eq!(plain.state_changes(), Ok(None));

        let context =
            ToolContext::new(address.clone(), "r", "c").with_state(schema.clone(), json!({"n": 0}));
        assert_eq!(context.state_changes(), Ok(None));
        context.set_state_field("/n", 2).unwrap();
        context.clone().set_state_field("/n", 3).unwrap();
        assert_eq!(context.state(), Some(json!({"n": 3})));
        let staged = context.state_changes().unwrap().unwrap();
        assert_eq!(staged.0.len(), 2);

        let spoiled = ToolContext::new(address, "r", "c").with_state(schema, json!({"n": 0}));
        spoiled.set_state_field("/n", 1).unwrap();
        assert!(matches!(
            spoiled.set_state_field("/n", -1),
            Err(StateError::SchemaMismatch { .. })
        ));
        assert_eq!(spoiled.state(), Some(json!({"n": 1})));
        assert!(spoiled.state_changes().is_err());
        assert!(spoiled.set_state_field("/n", 2).is_err());
    }
}

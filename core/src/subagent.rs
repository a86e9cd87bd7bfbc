//! Sub-agents: another agent type an agent may call as a tool (`subagent__<type>`). A call runs
//! the child as a session of the caller's tree; its final output is the call's result. The child
//! is addressed by its session id and agent type only, and the parent needs nothing of it but its
//! final status, output and state, so a child could one day live behind HTTP: how a call reaches
//! its child is the sub-agent's transport (`transport.rs`).
//!
//! The tool name of a sub-agent, `subagent__<type>`, is made by [`tool_name`] alone (and read
//! back by [`agent_type_of`]); the prefix is one of the agent builder's reserved ones.

mod a2a;
mod remote;
mod transport;
pub use a2a::A2aAgent;
pub use remote::{DEFAULT_MAX_FOLD_STATE_BYTES, RemoteAgent};
pub use transport::{SubAgentTransport, Transport};

use crate::{
    ToolSpec,
    store::SessionAddress,
    tool::{SchemaError, codes, compile},
};
use schemars::JsonSchema;
use serde_json::{Value, json};
use std::sync::Arc;
use uuid::Uuid;

/// The prefix of a sub-agent tool's name: `subagent__<agentType>`.
pub const SUB_AGENT_TOOL_PREFIX: &str = "subagent__";

/// The name of the tool that calls the agent type `agent_type`.
pub fn tool_name(agent_type: &str) -> String {
    format!("{SUB_AGENT_TOOL_PREFIX}{agent_type}")
}

/// The agent type a sub-agent tool name calls, if it is one.
pub fn agent_type_of(tool_name: &str) -> Option<&str> {
    tool_name.strip_prefix(SUB_AGENT_TOOL_PREFIX)
}

/// The address of the child a call of `parent` starts: in the parent's tree, with an id derived
/// from the parent session and the call, so a retried step attaches to the same child instead of
/// starting a second one. The id is `<root>.<32 hex digits>`, so the child can be addressed by
/// its id alone.
pub fn child_address(parent: &SessionAddress, tool_call_id: &str) -> SessionAddress {
    SessionAddress {
        root_session_id: parent.root_session_id.clone(),
        session_id: format!(
            "{}{}{}",
            parent.root_session_id,
            crate::ids::CHILD_SESSION_SEPARATOR,
            child_hash(&parent.session_id, tool_call_id)
        ),
    }
}

/// The session id of the remote child a call of `parent` starts on another service: derived
/// from the caller's secret, the parent session and the call (`rc-<32 hex digits>`), so a
/// retried start names the same child and attaches to it instead of starting a second one,
/// while nobody without the secret (a producer's user) can tell the id before the start and
/// claim it first. The store keeps the secret (`Store::remote_child_id`).
pub fn remote_child_id(secret: &str, parent: &SessionAddress, tool_call_id: &str) -> String {
    format!(
        "rc-{}",
        child_hash(
            &format!("{secret}/{}", parent.session_id),
            &format!("remote/{tool_call_id}")
        )
    )
}

/// What starts every relayed call's id and nothing else: a Baton id (`bt_`) marked `r`, which a
/// deduplicated model id (`bt_` and hex digits only) never is.
pub const RELAYED_CALL_MARKER: &str = "bt_r";

/// The id under which a caller's tree lists the call `producer_call_id` that its remote child
/// `child_session_id` waits on a person for: [`RELAYED_CALL_MARKER`] and 20 hex digits,
/// derived, so that a retried record of the child's pause names the same call.
pub fn relayed_call_id(child_session_id: &str, producer_call_id: &str) -> String {
    let hash = child_hash(child_session_id, &format!("relayed/{producer_call_id}"));
    format!("{RELAYED_CALL_MARKER}{}", &hash[..20])
}

/// Whether `tool_call_id` is one [`relayed_call_id`] gives: an answer to it is relayed.
pub fn is_relayed_call_id(tool_call_id: &str) -> bool {
    tool_call_id
        .strip_prefix(RELAYED_CALL_MARKER)
        .is_some_and(|hash| hash.len() == 20 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A fresh token for a remote child's turn-end callbacks: 64 hex digits of randomness.
pub fn new_callback_token() -> String {
    format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}

/// The run a child's end resumes its suspended parent with: derived from the parent's suspended
/// run, so that a retried report claims (and starts) the same run rather than a second one.
pub fn parent_resume_run_id(parent_session_id: &str, suspended_run_id: &str) -> String {
    child_hash(parent_session_id, &format!("resume-of/{suspended_run_id}"))
}

fn child_hash(parent_session_id: &str, tool_call_id: &str) -> String {
    // A fixed namespace of Baton's own: the same pair always names the same child.
    const NAMESPACE: Uuid = Uuid::from_u128(0x6261_746f_6e2d_7375_622d_6167_656e_7473);
    Uuid::new_v5(
        &NAMESPACE,
        format!("{parent_session_id}/{tool_call_id}").as_bytes(),
    )
    .simple()
    .to_string()
}

/// One sub-agent an agent may call: its agent type, what it is for, and optional schemas for its
/// input (by default `{message}`) and its output (the child's final output).
#[derive(Clone)]
pub struct SubAgent {
    agent_type: String,
    spec: ToolSpec,
    typed_input: bool,
    output_validator: Option<Arc<jsonschema::Validator>>,
    /// The line of its declaration, for a file-declared agent (registry errors name it).
    line: Option<usize>,
    /// How its calls reach the child, with a remote child's declaration.
    transport: Transport,
}

impl std::fmt::Debug for SubAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubAgent")
            .field("agent_type", &self.agent_type)
            .field("typed_input", &self.typed_input)
            .field("line", &self.line)
            .field("transport", &self.transport)
            .finish()
    }
}

impl SubAgent {
    /// A sub-agent taking `{message}` and giving the child's output as it is.
    pub fn new(agent_type: &str, description: &str) -> Self {
        Self {
            agent_type: agent_type.to_owned(),
            spec: ToolSpec {
                name: tool_name(agent_type),
                description: description.to_owned(),
                input_schema: json!({
                    "type": "object",
                    "properties": {"message": {
                        "type": "string",
                        "description": "What to ask the sub-agent."
                    }},
                    "required": ["message"],
                }),
            },
            typed_input: false,
            output_validator: None,
            line: None,
            transport: Transport::Local,
        }
    }

    /// A remote sub-agent, called as the tool `tool_name` (any tool name, not `subagent__…`):
    /// its child is the agent `remote.agent_type()` of another service (see [`RemoteAgent`]),
    /// taking `{message}` unless an input schema is set.
    pub fn remote(tool_name: &str, description: &str, remote: RemoteAgent) -> Self {
        let mut sub_agent = Self::new(remote.agent_type(), description);
        sub_agent.spec.name = tool_name.to_owned();
        sub_agent.transport = Transport::Remote(Arc::new(remote));
        sub_agent
    }

    /// An A2A sub-agent, called as the tool `tool_name`: its child is a task of the agent whose
    /// card `agent` names (see [`A2aAgent`]), taking `{message}` unless an input schema is set.
    /// Its agent type, as the caller's stream names it, is the tool's name.
    pub fn a2a(tool_name: &str, description: &str, agent: A2aAgent) -> Self {
        let mut sub_agent = Self::new(tool_name, description);
        sub_agent.spec.name = tool_name.to_owned();
        sub_agent.transport = Transport::A2a(Arc::new(agent));
        sub_agent
    }

    /// How a remote sub-agent is reached; `None` for a local or an A2A one.
    pub fn remote_agent(&self) -> Option<&RemoteAgent> {
        match &self.transport {
            Transport::Remote(remote) => Some(remote),
            Transport::Local | Transport::A2a(_) => None,
        }
    }

    /// How an A2A sub-agent is reached; `None` for any other.
    pub fn a2a_agent(&self) -> Option<&A2aAgent> {
        match &self.transport {
            Transport::A2a(agent) => Some(agent),
            Transport::Local | Transport::Remote(_) => None,
        }
    }

    /// A sub-agent whose input and output schemas are derived from Rust types.
    pub fn typed<I: JsonSchema, O: JsonSchema>(agent_type: &str, description: &str) -> Self {
        Self::new(agent_type, description)
            .input_schema(schemars::schema_for!(I).to_value())
            .and_then(|sub| sub.output_schema(schemars::schema_for!(O).to_value()))
            .expect("a schema derived by schemars is a valid JSON Schema")
    }

    /// The call's arguments must match this schema; the child gets them as JSON text.
    pub fn input_schema(mut self, schema: Value) -> Result<Self, SchemaError> {
        compile(&self.spec.name, "input", &schema)?;
        self.spec.input_schema = schema;
        self.typed_input = true;
        Ok(self)
    }

    /// The child's final output (JSON text) must match this schema; a mismatch is a tool error
    /// for the parent's model.
    pub fn output_schema(mut self, schema: Value) -> Result<Self, SchemaError> {
        self.output_validator = Some(Arc::new(compile(&self.spec.name, "output", &schema)?));
        Ok(self)
    }

    /// Records where a file declared it.
    pub fn at_line(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    /// The transport its calls take (its tag: see [`Self::declared_transport`] for what a
    /// remote one needs).
    pub fn transport(&self) -> SubAgentTransport {
        self.transport.kind()
    }

    /// The transport with its declaration.
    pub fn declared_transport(&self) -> &Transport {
        &self.transport
    }

    pub fn agent_type(&self) -> &str {
        &self.agent_type
    }

    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The child's first user message for a call with these arguments: the `message` of the
    /// default input, else the arguments as JSON text. The arguments are checked first.
    pub fn first_message(&self, arguments: &Value) -> Result<String, crate::ToolError> {
        let invalid = |message: String| crate::ToolError::new(codes::INVALID_TOOL_INPUT, message);
        if self.typed_input {
            let validator = compile(&self.spec.name, "input", &self.spec.input_schema)
                .map_err(|e| invalid(e.to_string()))?;
            if let Some(first) = validator.iter_errors(arguments).next() {
                return Err(invalid(format!("{}: {first}", first.instance_path)));
            }
            return Ok(arguments.to_string());
        }
        match arguments.get("message").and_then(Value::as_str) {
            Some(message) if !message.trim().is_empty() => Ok(message.to_owned()),
            _ => Err(invalid(
                "the input needs a non-empty string \"message\"".to_owned(),
            )),
        }
    }

    /// The call's result from the child's final output: with an output schema, the output parsed
    /// as JSON and checked; without, the output as a string.
    pub fn result_of(&self, output: &str) -> Result<Value, crate::ToolError> {
        let Some(validator) = &self.output_validator else {
            return Ok(Value::String(output.to_owned()));
        };
        let mismatch =
            |message: String| crate::ToolError::new(codes::INVALID_SUB_AGENT_OUTPUT, message);
        let value: Value = serde_json::from_str(output)
            .map_err(|e| mismatch(format!("the sub-agent's output is not JSON: {e}")))?;
        if let Some(first) = validator.iter_errors(&value).next() {
            return Err(mismatch(format!(
                "the sub-agent's output does not match its schema: {}: {first}",
                first.instance_path
            )));
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Topic {
        topic: String,
    }

    #[derive(serde::Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Findings {
        points: Vec<String>,
    }

    #[test]
    fn a_relayed_call_id_is_marked_and_a_deduplicated_model_id_is_not() {
        let relayed = relayed_call_id("rc-1", "call_1");
        assert!(is_relayed_call_id(&relayed), "{relayed}");
        assert_eq!(relayed, relayed_call_id("rc-1", "call_1"));
        assert_ne!(relayed, relayed_call_id("rc-1", "call_2"));
        // The shape `stage_turn.lua` gives a model id it deduplicates: `bt_` and 20 hex digits.
        assert!(!is_relayed_call_id("bt_0123456789abcdef0123"));
        assert!(!is_relayed_call_id("bt_r0123"));
        assert!(!is_relayed_call_id("call_1"));
    }

    #[test]
    fn sub_agents_name_their_tool_check_input_and_output_and_derive_child_ids() {
        let plain = SubAgent::new("researcher", "finds things");
        assert_eq!(plain.spec().name, "subagent__researcher");
        assert_eq!(agent_type_of("subagent__researcher"), Some("researcher"));
        assert_eq!(agent_type_of("lookup"), None);
        assert_eq!(
            plain.first_message(&json!({"message": "find x"})).unwrap(),
            "find x"
        );
        let missing = plain.first_message(&json!({})).unwrap_err();
        assert_eq!(missing.code, codes::INVALID_TOOL_INPUT);
        assert_eq!(plain.result_of("done").unwrap(), json!("done"));

        let typed = SubAgent::typed::<Topic, Findings>("researcher", "finds things");
        assert_eq!(
            typed.first_message(&json!({"topic": "rust"})).unwrap(),
            r#"{"topic":"rust"}"#
        );
        assert!(typed.first_message(&json!({"topic": 3})).is_err());
        assert_eq!(
            typed.result_of(r#"{"points":["a"]}"#).unwrap(),
            json!({"points": ["a"]})
        );
        let wrong = typed.result_of(r#"{"points":"a"}"#).unwrap_err();
        assert_eq!(wrong.code, codes::INVALID_SUB_AGENT_OUTPUT);
        assert!(typed.result_of("not json").is_err());

        let root = SessionAddress::root("parent");
        let child = child_address(&root, "call-1");
        assert_eq!(child, child_address(&root, "call-1"));
        assert_ne!(child, child_address(&root, "call-2"));
        assert_eq!(child.root_session_id, "parent");
        assert!(crate::ids::is_valid_session_id(&child.session_id));
        assert_eq!(crate::ids::root_of(&child.session_id), "parent");
        let remote = remote_child_id("secret", &root, "call-1");
        assert_eq!(remote, remote_child_id("secret", &root, "call-1"));
        assert_ne!(remote, remote_child_id("secret", &root, "call-2"));
        assert_ne!(remote, remote_child_id("another", &root, "call-1"));
        assert!(crate::ids::is_valid_session_id(&remote) && remote.starts_with("rc-"));
        let grandchild = child_address(&child, "call-1");
        assert_ne!(grandchild, child);
        assert_eq!(grandchild.root_session_id, "parent");
    }
}

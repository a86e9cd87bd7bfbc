//! The agents of the remote sub-agent tests, for the in-process harnesses and the killable test
//! worker alike: the consumer's `remote_delegator` (one call of a remote `research` tool, then
//! an answer with its result), and a producer's `gated` agent whose `gate` tool waits until the
//! test opens it, so a test can act while the consumer follows the child; `ask_then_approve`, a
//! producer's agent that waits for a person twice (a question, then an approval).

use baton_core::{
    Agent, AgentRegistry, ScriptedModel,
    subagent::{RemoteAgent, SubAgent},
    tool::tool,
};
use serde_json::json;
use std::{sync::Arc, time::Duration};

/// The variables the test worker reads to serve `remote_delegator`: the producer's mount URL
/// and the agent type there.
pub const REMOTE_URL_ENV: &str = "BATON_TEST_REMOTE_URL";
pub const REMOTE_AGENT_ENV: &str = "BATON_TEST_REMOTE_AGENT";

/// The consumer's registry: `remote_delegator` calling `remote` as the tool `research`.
pub fn delegating(remote: SubAgent) -> AgentRegistry {
    AgentRegistry::new([delegator(remote)]).expect("a valid test registry")
}

/// The agent of [`delegating`], alone.
pub fn delegator(remote: SubAgent) -> Agent {
    let model = ScriptedModel::default()
        .call("research", json!({"message": "hello"}))
        .answer("got {{result:research}}");
    Agent::builder("remote_delegator")
        .model(model)
        .sub_agent_with(remote)
        .max_steps(4)
        .build()
        .expect("a valid test agent")
}

/// The agent type `agent_type` of the mount at `url` (`http://host:port/agents`), retrying
/// quickly, called with the test servers' service key.
pub fn remote(url: &str, agent_type: &str) -> RemoteAgent {
    remote_without_credential(url, agent_type).bearer(crate::TEST_SERVICE_KEY)
}

/// [`remote`] without a credential.
pub fn remote_without_credential(url: &str, agent_type: &str) -> RemoteAgent {
    let mut remote = RemoteAgent::new(url, agent_type);
    remote.retry_base_delay = Duration::from_millis(20);
    remote.read_timeout = Duration::from_secs(5);
    remote
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

/// The producer's `gated`: calls `gate`, which returns once `gate` has a permit, then answers
/// `opened`.
pub fn gated(gate: Arc<tokio::sync::Semaphore>) -> Agent {
    let gate_tool = tool("gate", "Waits for the test.", move |_: Nothing| {
        let gate = gate.clone();
        async move {
            let _permit = gate.acquire().await.map_err(|e| e.to_string())?;
            Ok::<_, String>("open")
        }
    });
    let model = ScriptedModel::default()
        .call("gate", json!({}))
        .answer("opened");
    Agent::builder("gated")
        .model(model)
        .tool(gate_tool)
        .max_steps(3)
        .build()
        .expect("a valid test agent")
}

/// The producer's `ask_then_approve`: step 1 asks the person a question (`ask_user`, a client
/// tool), step 2 calls `transfer`, which needs their approval, step 3 answers with both results.
pub fn ask_then_approve() -> Agent {
    let model = ScriptedModel::default()
        .call("ask_user", json!({"question": "Name?"}))
        .call("transfer", json!({"to": "alice", "amount": 10}))
        .answer("{{result:ask_user}} / {{result:transfer}}");
    // Rendered as a form: the hint crosses the boundary with the relayed call.
    let ask = crate::agents::ask_user().render(baton_core::tool::RenderHint::Elicitation);
    Agent::builder("ask_then_approve")
        .model(model)
        .client_tool(ask)
        .tool(crate::agents::transfer())
        .client_tool_timeout(Duration::from_secs(600))
        .max_steps(5)
        .build()
        .expect("a valid test agent")
}

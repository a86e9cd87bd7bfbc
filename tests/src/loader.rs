//! The suspended-session loader of the `million` benchmark: writes a session that a real first
//! run suspended on its client calls, through the store's own scripts and in the order the
//! server and the worker write them — the start (`create_session.lua`), the step's
//! `step_start`, the model's turn staged, the suspending commit with a pending entry per call,
//! and the deadline index entry of a far deadline — without Temporal: a suspended session holds
//! no workflow. The turn comes from the agent's own model (scripted), so the log, the usage and
//! the pending calls are what the run would have written; the e2e test `loader` compares a
//! loaded session with one a real run suspended, key by key, the search index's entries (terms
//! and record, written by the store after each change as for a real run) included.

use baton_core::{
    Agent, Message,
    agent::AgentTool,
    ids,
    model::ModelRequest,
    store::{
        self, NewSession, PendingCall, PendingKind, SessionAddress, StagedTurn, StepRef,
        UsageRecord,
    },
};
use std::time::Duration;

/// A loaded session's ids.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub session_id: String,
    pub run_id: String,
    pub stream_id: String,
}

/// Writes one session of `agent` suspended on its first turn's client calls, as a first run
/// started with `user_message` leaves it. `deadline_horizon` is the worker's: a deadline
/// further away goes into the deadline index (`None`: never, as a worker without the index).
/// `max_chunks` is the server's stream retention.
pub async fn load_suspended(
    store: &store::Store,
    agent: &Agent,
    user_message: &str,
    deadline_horizon: Option<Duration>,
    max_chunks: u64,
) -> anyhow::Result<Loaded> {
    let session_id = ids::new_session_id();
    let run_id = ids::new_run_id();
    let stream_id = ids::new_session_id();
    let address = SessionAddress::root(&session_id);
    let workflow_id = ids::first_run_workflow_id(agent.name(), &session_id);
    let messages = baton_worker::ops::first_log(agent, user_message);
    store
        .create_session(NewSession {
            address: &address,
            agent_type: agent.name(),
            run_id: &run_id,
            stream_id: &stream_id,
            workflow_id: &workflow_id,
            messages: &messages,
            max_chunks,
        })
        .await?;
    let step = StepRef {
        address: &address,
        stream_id: &stream_id,
        run_id: &run_id,
        step: 1,
    };
    store.emit_first_step_start(step, store::now_ms()).await?;
    let (deltas, _ignored) = tokio::sync::mpsc::unbounded_channel();
    let turn = agent
        .model()
        .generate(
            ModelRequest {
                messages: &messages,
                tools: &agent.tool_specs(),
            },
            deltas,
        )
        .await
        .map_err(|error| anyhow::anyhow!("the agent's model failed: {error}"))?;
    anyhow::ensure!(
        !turn.tool_calls.is_empty(),
        "the agent's first turn calls no tool: nothing would suspend"
    );
    let now = store::now_ms();
    let mut pending = Vec::with_capacity(turn.tool_calls.len());
    for call in &turn.tool_calls {
        anyhow::ensure!(
            matches!(agent.any_tool(&call.name), Some(AgentTool::Client(_))),
            "the agent's first turn calls {}, not a client tool: the loader writes client calls only",
            call.name
        );
        pending.push(PendingCall {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            input: call.arguments.clone(),
            kind: PendingKind::Client,
            step: 1,
            deadline_at: now + agent.answer_timeout(&call.name).as_millis() as u64,
            completed_retention_ms: agent.completed_retention().as_millis() as u64,
            approval_id: None,
            awaited_since: now,
            asked: None,
        });
    }
    let mut staged = StagedTurn {
        message: Message::answered(turn.text, turn.tool_calls, Vec::new(), now),
        usage: UsageRecord {
            run_id: run_id.clone(),
            step: 1,
            model: agent.model().name().to_owned(),
            usage: turn.usage,
        },
    };
    // A fresh root has no call ids yet: staging keeps the model's ids, which `pending` names.
    store.stage_turn(step, &mut staged).await?;
    store.commit_suspended_step(step, &pending).await?;
    let wake_at = pending.iter().map(|call| call.deadline_at).min();
    if let (true, Some(wake_at), Some(horizon)) =
        (agent.resume_on_deadline(), wake_at, deadline_horizon)
        && wake_at > store::now_ms() + horizon.as_millis() as u64
    {
        store.index_deadline(&address, &run_id, wake_at).await?;
    }
    Ok(Loaded {
        session_id,
        run_id,
        stream_id,
    })
}

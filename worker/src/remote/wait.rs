//! The remote-wait sweep's pass (its loop is `crate::sweeps`'): a caller whose remote child ran past its follower's window waits on
//! it holding nothing (no activity, no connection); this sweep reads the due members of the
//! remote-wait index (`baton_core::store::RemoteWait`), each checked against its caller first,
//! and polls the child's `status` on its producer (an A2A child's task, with `tasks/get`). Once
//! the child's turn has ended (or nothing executes it) the child's follow is started (`RemoteFollowWorkflow`, without a resume), which
//! reads the child on from the durable cursor and, at its end, answers and resumes the caller,
//! or records the calls it waits on a person for. A child still running is looked at again a
//! period later.

use super::follow::{ChildFollow, FollowTargets};
use baton_activities::io::ActivityPolicy;
use baton_core::{
    AgentRegistry, Store,
    remote::Status as RemoteStatus,
    store::{A2aChild, RemoteWait, Status, now_ms},
    subagent::{SubAgent, Transport},
};
use baton_remote::{A2aClient, Producer};
use std::time::Duration;
use temporalio_client::Client;

/// How the remote-wait sweep runs.
#[derive(Debug, Clone)]
pub struct RemoteWaitSweep {
    /// How often a pass runs.
    pub every: Duration,
    /// How soon a child still running is polled again.
    pub poll_every: Duration,
}

impl Default for RemoteWaitSweep {
    fn default() -> Self {
        Self {
            every: Duration::from_secs(1),
            poll_every: Duration::from_secs(30),
        }
    }
}

/// Where the sweep starts a child's follow, and with what.
#[derive(Clone)]
pub struct RemoteWaitTargets {
    pub store: Store,
    pub registry: AgentRegistry,
    pub temporal: Client,
    pub task_queue: String,
    pub policy: ActivityPolicy,
}

/// Most members read from the index at once.
const BATCH: usize = 128;

/// One pass over the due members; answers how many follows it started.
pub async fn sweep_remote_waits_once(
    targets: &RemoteWaitTargets,
    http: &reqwest::Client,
    sweep: &RemoteWaitSweep,
) -> Result<usize, baton_core::store::Error> {
    let now = now_ms();
    let mut started = 0;
    for wait in targets.store.due_remote_waits(now, BATCH).await? {
        if look_at(targets, http, sweep, &wait, now).await? {
            started += 1;
        }
    }
    Ok(started)
}

/// Looks at one member: out of the index when its caller no longer waits on the child, the
/// child's follow started when its turn has ended, else due again a period later.
async fn look_at(
    targets: &RemoteWaitTargets,
    http: &reqwest::Client,
    sweep: &RemoteWaitSweep,
    wait: &RemoteWait,
    now: u64,
) -> Result<bool, baton_core::store::Error> {
    let store = &targets.store;
    let later = RemoteWait {
        due_at: now.saturating_add(u64::try_from(sweep.poll_every.as_millis()).unwrap_or(u64::MAX)),
        ..wait.clone()
    };
    let Some(caller) = store.session(&wait.address).await? else {
        store.unindex_remote_wait(wait).await?;
        return Ok(false);
    };
    if caller.run_id != wait.run_id || caller.status.is_terminal() {
        store.unindex_remote_wait(wait).await?;
        return Ok(false);
    }
    // The run that let go of the child has not committed its suspension yet: look again.
    if caller.status != Status::SuspendedClientTool {
        store.index_remote_wait(&later).await?;
        return Ok(false);
    }
    let pending = store.pending_calls(&wait.address).await?;
    let answers = store.answers(&wait.address).await?;
    let relaying = store
        .relayed_groups(&wait.address)
        .await?
        .iter()
        .any(|group| group.via_call_id == wait.tool_call_id);
    let call = pending
        .into_iter()
        .find(|call| call.tool_call_id == wait.tool_call_id);
    let agent = targets.registry.get(&caller.agent_type);
    let transport = call
        .as_ref()
        .zip(agent.as_ref())
        .and_then(|(call, agent)| agent.sub_agent(&call.tool_name))
        .map(SubAgent::declared_transport)
        .filter(|transport| !matches!(transport, Transport::Local));
    let (Some(call), Some(transport)) = (call, transport) else {
        store.unindex_remote_wait(wait).await?;
        return Ok(false);
    };
    // Answered, or paused for a person (the root's resume goes on from there).
    if answers.contains_key(&wait.tool_call_id) || relaying {
        store.unindex_remote_wait(wait).await?;
        return Ok(false);
    }
    let child = store
        .remote_child_id(&wait.address, &wait.tool_call_id)
        .await?;
    match still_works(store, http, transport, &wait.address, &child).await {
        Ok(false) => {}
        Ok(true) => {
            store.index_remote_wait(&later).await?;
            return Ok(false);
        }
        Err(error) => {
            tracing::warn!(%child, %error, "a waiting remote child cannot be read; looked at again later");
            store.index_remote_wait(&later).await?;
            return Ok(false);
        }
    }
    let follow = ChildFollow {
        address: &wait.address,
        caller: &caller,
        call: &call,
        first_relayed: None,
        resume_child: false,
    };
    let on = FollowTargets {
        temporal: &targets.temporal,
        task_queue: &targets.task_queue,
        policy: &targets.policy,
    };
    let workflow_id = match follow.start(on).await {
        Ok(workflow_id) => workflow_id,
        Err(error) => {
            let workflow_id = follow.workflow_id();
            tracing::warn!(%workflow_id, error = %error.error, "a remote child's follow did not start; looked at again later");
            store.index_remote_wait(&later).await?;
            return Ok(false);
        }
    };
    tracing::info!(%child, %workflow_id, "a waiting remote child's turn ended; its follow started");
    store.unindex_remote_wait(wait).await?;
    Ok(true)
}

/// Whether the remote child `child` of `address` still works on its turn: a Baton child
/// running and executing, an A2A task in a state that ends no stream (submitted, working).
async fn still_works(
    store: &Store,
    http: &reqwest::Client,
    transport: &Transport,
    address: &baton_core::store::SessionAddress,
    child: &str,
) -> Result<bool, String> {
    match transport {
        Transport::Local => Ok(false),
        Transport::Remote(remote) => {
            let status = Producer::new(http, remote)
                .status(child)
                .await
                .map_err(|error| error.to_string())?;
            Ok(status.status == RemoteStatus::Running && status.is_executing)
        }
        Transport::A2a(agent) => {
            let A2aChild::Task(task_id) = store
                .a2a_child(address, child)
                .await
                .map_err(|error| error.to_string())?
            else {
                // No task to read: the follow says what that means for the call.
                return Ok(false);
            };
            let client = A2aClient::connect(http, agent)
                .await
                .map_err(|error| error.to_string())?;
            let task = client
                .get(&task_id)
                .await
                .map_err(|error| error.to_string())?;
            Ok(!task.status.state.ends_a_stream())
        }
    }
}

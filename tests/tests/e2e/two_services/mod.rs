//! Remote sub-agents between two real `batond` services on loopback: a producer and a consumer,
//! each a `batond server` and a `batond worker` process with its own key prefix, task queue and
//! agents file; the consumer's file declares `[[agent.remote_agent]]` pointing at the
//! producer's mount, its bearer read from an environment variable. What the in-process tests of
//! `remote.rs` and `mount/` check on harnesses is checked here on the processes an operator
//! runs, with their workers killed under them.

mod a2a;
mod faults;
mod flow;
mod mount;
mod orphans;
mod people;
mod stops;

use baton_client::{Client as _, HttpClient};
use baton_core::{
    ChunkKind, Message, Store, StreamChunk, api::StartResponse, store::SessionAddress,
};
use baton_tests::{
    WAIT_LIMIT, chunks_through,
    procs::{Batond, BatondLauncher, Placement, placement_flags, workspace_binary},
    redis_url, temporal_settings, unique,
};
use baton_worker::connect_temporal;
use std::{path::PathBuf, time::Duration};
use temporalio_client::{Client, WorkflowCountOptions};

/// The producer's operator key, which the consumer's agents file reads from [`TOKEN_ENV`].
const PRODUCER_KEY: &str = "producer-operator-key-of-32-bytes";
const TOKEN_ENV: &str = "PRODUCER_TOKEN";

/// How long the producer's `sleeper` child works in its `sleep` tool: long enough to kill a
/// worker under it.
const NAP_MS: u64 = 4000;

/// The producer's agents: `researcher` (a calculator call, then an answer), `sleeper` (a
/// `sleep` call, then an answer), `chronicler` (its state set twice around a `sleep`), `asker`
/// (a question to the person, then a calculator call they approve, then an answer with both),
/// `streamer` (a chunk every ~100 ms for seconds, then an answer), and a projected mount `/public/agents` keeping the chronicler's `phase`.
fn producer_agents() -> String {
    format!(
        r#"
[[agent]]
name = "researcher"
max_steps = 3
tools = ["calculator"]
[agent.model]
kind = "scripted"
turns = [
  {{ tool_calls = [{{ name = "calculator", arguments = {{ operation = "add", a = 40, b = 2 }} }}] }},
  {{ text = "found {{{{result:calculator}}}}" }},
]

[[agent]]
name = "sleeper"
max_steps = 3
tools = ["sleep"]
[agent.model]
kind = "scripted"
turns = [
  {{ tool_calls = [{{ name = "sleep", arguments = {{ ms = {NAP_MS} }} }}] }},
  {{ text = "rested" }},
]

[[agent]]
name = "chronicler"
max_steps = 4
tools = ["sleep"]
[agent.model]
kind = "scripted"
turns = [
  {{ tool_calls = [{{ name = "note", arguments = {{ phase = "reading", count = 1 }} }}] }},
  {{ tool_calls = [{{ name = "sleep", arguments = {{ ms = 1500 }} }}, {{ name = "note", arguments = {{ phase = "writing", count = 2 }} }}] }},
  {{ text = "noted" }},
]
[agent.state]
schema = {{ type = "object", properties = {{ phase = {{ type = "string" }}, count = {{ type = "integer" }} }} }}
defaults = {{ phase = "idle", count = 0 }}
[[agent.state_tool]]
name = "note"
description = "Notes the phase and the count."
fields = ["phase", "count"]

[[agent]]
name = "asker"
max_steps = 4
tools = ["calculator"]
approval_required = ["calculator"]
client_tool_timeout_secs = 600
[agent.model]
kind = "scripted"
turns = [
  {{ tool_calls = [{{ name = "ask_user", arguments = {{ question = "Name?" }} }}] }},
  {{ tool_calls = [{{ name = "calculator", arguments = {{ operation = "add", a = 40, b = 2 }} }}] }},
  {{ text = "{{{{result:ask_user}}}} / {{{{result:calculator}}}}" }},
]
[[agent.client_tool]]
name = "ask_user"
description = "Asks the person a question."
input_schema = {{ type = "object", properties = {{ question = {{ type = "string" }} }}, required = ["question"] }}
output_schema = {{ type = "object", properties = {{ answer = {{ type = "string" }} }}, required = ["answer"] }}

[[agent]]
name = "streamer"
max_steps = {streamer_steps}
tools = ["sleep"]
[agent.model]
kind = "scripted"
turns = [
  {streamer_turns}
  {{ text = "streamed" }},
]

[[mount]]
base_path = "/public/agents"
state_fields = ["phase"]
"#,
        streamer_steps = STREAMER_STEPS + 2,
        streamer_turns = r#"{ tool_calls = [{ name = "sleep", arguments = { ms = 100 } }] },"#
            .repeat(STREAMER_STEPS),
    )
}

/// How many short `sleep` steps the producer's `streamer` takes before it answers: it writes a
/// chunk every ~100 ms for several seconds, so its follower always has a chunk coming.
const STREAMER_STEPS: usize = 40;

/// How the consumer's `delegator` reaches the producer.
struct Remote<'a> {
    /// The producer's mount, `http://host:port/agents`.
    url: &'a str,
    agent_type: &'a str,
    max_retries: u32,
    read_timeout_secs: u64,
    dead_after_attaches: u32,
    /// How long the consumer's follower reads a child that has not ended its turn.
    follow_window_secs: u64,
    /// How many calls of `research` the delegator makes, one per step, before it answers.
    calls: usize,
    /// Whether the delegator asks the person (client tool `ask`) after its first call.
    ask_after_first: bool,
    /// Whether `research` is declared over A2A (`[[agent.a2a_agent]]`, by the agent's card on
    /// the producer's mount) rather than the mount's protocol.
    a2a: bool,
}

impl<'a> Remote<'a> {
    fn to(url: &'a str, agent_type: &'a str) -> Self {
        Self {
            url,
            agent_type,
            max_retries: 3,
            read_timeout_secs: 5,
            dead_after_attaches: 3,
            follow_window_secs: 60,
            calls: 1,
            ask_after_first: false,
            a2a: false,
        }
    }
}

/// The consumer's `delegator`: calls of the remote `research` tool (one per step), then an
/// answer with the last one's result (or its error).
fn consumer_agents(remote: &Remote<'_>) -> String {
    let call =
        r#"{ tool_calls = [{ name = "research", arguments = { message = "look it up" } }] }"#;
    let mut turns: Vec<&str> = std::iter::repeat_n(call, remote.calls)
        .chain([r#"{ text = "got {{result:research}}" }"#])
        .collect();
    let mut ask = "";
    if remote.ask_after_first {
        turns.insert(1, r#"{ tool_calls = [{ name = "ask", arguments = {} }] }"#);
        ask = "[[agent.client_tool]]\nname = \"ask\"\ndescription = \"Asks the person.\"\n\
               input_schema = { type = \"object\" }\n";
    }
    format!(
        r#"
[[agent]]
name = "delegator"
max_steps = {max_steps}
[agent.model]
kind = "scripted"
turns = [
  {turns},
]

{declaration}
{ask}
"#,
        declaration = if remote.a2a {
            a2a_declaration(remote)
        } else {
            mount_declaration(remote)
        },
        max_steps = turns.len() + 2,
        turns = turns.join(",\n  "),
    )
}

/// `research` over the mount's protocol.
fn mount_declaration(remote: &Remote<'_>) -> String {
    format!(
        r#"[[agent.remote_agent]]
name = "research"
description = "Delegates to the producer."
url = "{url}"
agent_type = "{agent_type}"
bearer_env = "{TOKEN_ENV}"
max_retries = {max_retries}
retry_base_delay_ms = 20
read_timeout_secs = {read_timeout_secs}
dead_after_attaches = {dead_after_attaches}
follow_window_secs = {follow_window_secs}
"#,
        url = remote.url,
        agent_type = remote.agent_type,
        max_retries = remote.max_retries,
        read_timeout_secs = remote.read_timeout_secs,
        dead_after_attaches = remote.dead_after_attaches,
        follow_window_secs = remote.follow_window_secs,
    )
}

/// `research` over A2A: the producer's agent by its card.
fn a2a_declaration(remote: &Remote<'_>) -> String {
    format!(
        r#"[[agent.a2a_agent]]
name = "research"
description = "Delegates to the producer over A2A."
card_url = "{url}/{agent_type}{card}"
bearer_env = "{TOKEN_ENV}"
max_retries = {max_retries}
retry_base_delay_ms = 20
read_timeout_secs = {read_timeout_secs}
poll_interval_ms = 100
follow_window_secs = {follow_window_secs}
"#,
        url = remote.url,
        agent_type = remote.agent_type,
        card = baton_core::a2a::AGENT_CARD_PATH,
        max_retries = remote.max_retries,
        read_timeout_secs = remote.read_timeout_secs,
        follow_window_secs = remote.follow_window_secs,
    )
}

/// One Baton service: a `batond server` and (unless stopped) a `batond worker`, on their own
/// key prefix and task queue, with quick heartbeats so a killed worker is noticed in seconds.
struct Service {
    name: &'static str,
    launcher: BatondLauncher,
    flags: Vec<String>,
    server: Batond,
    worker: Option<Batond>,
    workers_started: usize,
    task_queue: String,
    prefix: String,
    /// The service's keys, read directly.
    store: Store,
    temporal: Client,
    client: HttpClient,
}

impl Service {
    /// Starts the service's server and worker with `agents` (an agents file's text) and
    /// `auth` (the server's flags or variables for it).
    async fn start(name: &'static str, agents: &str, auth: Auth) -> Self {
        let mut service = Self::idle(name, agents, auth).await;
        service.start_worker();
        service
    }

    /// Starts the service's server alone: nothing runs its workflows until
    /// [`Self::start_worker`] (which takes the flags then in `flags`).
    async fn idle(name: &'static str, agents: &str, auth: Auth) -> Self {
        let dir = std::env::temp_dir().join(unique(&format!("two-services-{name}")));
        std::fs::create_dir_all(&dir).unwrap();
        let agents_file: PathBuf = dir.join(format!("{name}.toml"));
        std::fs::write(&agents_file, agents).unwrap();
        let prefix = unique(name);
        let task_queue = unique(name);
        let mut launcher = BatondLauncher::new(
            workspace_binary("baton-worker", "batond").expect("batond builds"),
            dir,
        )
        .with_env(TOKEN_ENV, PRODUCER_KEY);
        let mut flags = placement_flags(&Placement {
            redis_url: &redis_url(),
            temporal: &baton_tests::temporal_address(),
            prefix: &prefix,
            task_queue: &task_queue,
            agents: &agents_file,
        });
        flags.extend(
            [
                "--heartbeat-timeout-secs",
                "2",
                "--heartbeat-every-ms",
                "300",
                "--sticky-timeout-ms",
                "1000",
                "--submits-per-minute",
                "0",
                // The producer calls back the consumer's `/remote-callbacks` on loopback.
                "--callback-hosts",
                "127.0.0.1",
            ]
            .iter()
            .map(|s| (*s).to_owned()),
        );
        match auth {
            Auth::Open => flags.push("--allow-unauthenticated".to_owned()),
            Auth::Key => launcher = launcher.with_env("BATON_API_KEYS", PRODUCER_KEY),
        }
        let server = launcher
            .server(&format!("{name}-server"), &flags)
            .await
            .expect("the server starts");
        let store = Store::connect(&redis_url(), prefix.clone()).await.unwrap();
        let temporal = connect_temporal(&temporal_settings()).await.unwrap();
        let client = match auth {
            Auth::Open => HttpClient::new(server.base_url()),
            Auth::Key => HttpClient::with_bearer(server.base_url(), PRODUCER_KEY).unwrap(),
        };
        Self {
            name,
            launcher,
            flags,
            server,
            worker: None,
            workers_started: 0,
            task_queue,
            prefix,
            store,
            temporal,
            client,
        }
    }

    /// The service's raw mount, `http://host:port/agents`.
    fn mount_url(&self) -> String {
        format!("{}/agents", self.server.base_url())
    }

    /// Starts a worker process (another one after a kill).
    fn start_worker(&mut self) {
        self.workers_started += 1;
        let name = format!("{}-worker-{}", self.name, self.workers_started);
        self.worker = Some(
            self.launcher
                .worker(&name, &self.flags)
                .expect("the worker starts"),
        );
    }

    /// SIGKILLs the worker process, whatever it was doing.
    fn kill_worker(&mut self) {
        if let Some(mut worker) = self.worker.take() {
            worker.kill();
        }
    }

    /// Terminates the first run's workflow of `agent_type`'s session `session_id`: the service
    /// lost the run while the session says it runs (a zombie).
    async fn lose_first_run(&self, agent_type: &str, session_id: &str) {
        self.temporal
            .get_workflow_handle::<baton_workflows::AgentRunWorkflow>(
                baton_core::ids::first_run_workflow_id(agent_type, session_id),
            )
            .terminate(temporalio_client::WorkflowTerminateOptions::default())
            .await
            .unwrap();
    }

    /// How many agent runs (workflows) the service's task queue has had.
    async fn runs(&self) -> usize {
        let query = format!(
            "TaskQueue = '{}' AND WorkflowType = 'AgentRunWorkflow'",
            self.task_queue
        );
        self.temporal
            .count_workflows(query, WorkflowCountOptions::default())
            .await
            .unwrap()
            .count()
    }

    /// The keys the service has written.
    async fn keys(&self) -> Vec<String> {
        baton_tests::keys_with_prefix(&self.prefix).await
    }

    /// Every chunk of a session's stream, from the store.
    async fn chunks(&self, session_id: &str) -> Vec<StreamChunk> {
        self.store
            .chunks_after(&SessionAddress::root(session_id), 0, 10_000)
            .await
            .unwrap()
    }

    /// A session's log.
    async fn messages(&self, session_id: &str) -> Vec<Message> {
        self.store
            .messages(&SessionAddress::root(session_id))
            .await
            .unwrap()
    }
}

/// How a service's server authenticates.
#[derive(Clone, Copy)]
enum Auth {
    /// `--allow-unauthenticated`.
    Open,
    /// Built-in auth with [`PRODUCER_KEY`] as its operator key (from `BATON_API_KEYS`).
    Key,
}

/// A producer serving [`producer_agents`] behind [`PRODUCER_KEY`].
async fn producer() -> Service {
    Service::start("producer", &producer_agents(), Auth::Key).await
}

/// A consumer whose `delegator` reaches the producer as `remote` says.
async fn consumer(remote: &Remote<'_>) -> Service {
    Service::start("consumer", &consumer_agents(remote), Auth::Open).await
}

/// Starts a `delegator` session on the consumer.
async fn delegate(consumer: &Service) -> StartResponse {
    consumer.client.start("delegator", "go").await.unwrap()
}

/// A producer, a consumer whose `delegator` calls the producer's `agent_type`, and a
/// `delegator` session started on the consumer.
async fn delegated_to(agent_type: &str) -> (Service, Service, StartResponse) {
    let producer = producer().await;
    let url = producer.mount_url();
    let consumer = consumer(&Remote::to(&url, agent_type)).await;
    let started = delegate(&consumer).await;
    (producer, consumer, started)
}

/// Follows the consumer's session to its end: every chunk.
async fn until_end(consumer: &Service, session_id: &str) -> Vec<StreamChunk> {
    chunks_through(&consumer.client, session_id, 0, WAIT_LIMIT, false).await
}

/// Polls `check` every 50 ms until it answers something, at most [`WAIT_LIMIT`].
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let wait = async {
        loop {
            if let Some(found) = check().await {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, wait)
        .await
        .unwrap_or_else(|_| panic!("{what} did not happen in time"))
}

/// The remote child the consumer's session announced (`subagent_start`), once it has.
async fn announced_child(consumer: &Service, session_id: &str) -> String {
    announced_children(consumer, session_id, 1).await.remove(0)
}

/// The first `count` remote children the consumer's session announced, once it has.
async fn announced_children(consumer: &Service, session_id: &str, count: usize) -> Vec<String> {
    eventually("the children's announcements", || async {
        let children: Vec<String> = consumer
            .chunks(session_id)
            .await
            .into_iter()
            .filter_map(|c| match c.kind {
                ChunkKind::SubagentStart { sub_session_id, .. } => Some(sub_session_id),
                _ => None,
            })
            .collect();
        (children.len() >= count).then(|| children.into_iter().take(count).collect())
    })
    .await
}

/// Waits until a chunk of `session_id`'s stream on `service` is a `tool_start` of `tool`.
async fn until_tool_start(service: &Service, session_id: &str, tool: &str) {
    eventually("the tool's start", || async {
        service.chunks(session_id).await.into_iter().find(
            |c| matches!(&c.kind, ChunkKind::ToolStart { tool_name, .. } if tool_name == tool),
        )
    })
    .await;
}

/// Waits until the tool activity (`execute_tool`) of `workflow_id` on `service` has started and
/// heartbeated, as Temporal sees it: a worker is inside the tool's body (its `tool_start` chunk
/// is staged with the turn, before the activity is even scheduled).
async fn until_tool_heartbeats(service: &Service, workflow_id: &str) {
    use temporalio_common::protos::temporal::api::enums::v1::PendingActivityState;
    let handle = service
        .temporal
        .get_workflow_handle::<baton_workflows::AgentRunWorkflow>(workflow_id.to_owned());
    eventually("the tool activity's heartbeat", || async {
        let description = handle.describe(Default::default()).await.ok()?;
        description
            .raw()
            .pending_activities
            .iter()
            .any(|activity| {
                activity
                    .activity_type
                    .as_ref()
                    .is_some_and(|kind| kind.name.contains("execute_tool"))
                    && activity.state() == PendingActivityState::Started
                    && activity.last_heartbeat_time.is_some()
            })
            .then_some(())
    })
    .await;
}

/// The forwarded chunks of a stream hold no `(childSessionId, childSequence)` twice, each names
/// the child as its emitter and the caller's stream as its own, and they are exactly what the
/// child streamed before its end, in its order.
async fn assert_forwarded_once(
    producer: &Service,
    child: &str,
    chunks: &[StreamChunk],
    stream_id: &str,
) {
    let copies = crate::remote::forwarded(chunks);
    assert!(!copies.is_empty(), "no chunk was forwarded");
    let mut pairs = std::collections::HashSet::new();
    for copy in &copies {
        let source = copy.remote_source.as_ref().unwrap();
        assert_eq!(source.child_session_id, child);
        assert_eq!(copy.header.agent_id, child);
        assert_eq!(copy.header.stream_id, stream_id);
        assert!(
            pairs.insert((source.child_session_id.clone(), source.child_sequence)),
            "{source:?} twice"
        );
    }
    crate::remote::assert_forwarded_once_in_order(&producer.store, child, &copies).await;
    let kinds: Vec<&str> = chunks.iter().map(|c| c.kind.name()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "subagent_start").count(), 1);
    assert_eq!(kinds.iter().filter(|k| **k == "subagent_end").count(), 1);
}

/// The attempts of the activities `workflow_id`'s history started, on `service`'s Temporal.
async fn activity_attempts(service: &Service, workflow_id: &str) -> Vec<i32> {
    use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;
    crate::round_cost::history_on(&service.temporal, workflow_id)
        .await
        .iter()
        .filter_map(|event| match &event.attributes {
            Some(Attributes::ActivityTaskStartedEventAttributes(started)) => Some(started.attempt),
            _ => None,
        })
        .collect()
}

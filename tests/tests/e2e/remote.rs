//! Remote sub-agents across two services on loopback: a consumer (its own server, worker, key
//! prefix and task queue) whose agent calls a child that a producer (another server, worker,
//! prefix and queue) serves on its mount. The child starts once under the id derived from the
//! call, its chunks reach the caller's stream stamped `remoteSource` and each once, its output
//! is the call's result and its usage counts in the caller's rollup; a producer that is down,
//! refuses the consumer's credential or answers outside the schema is a typed tool error.

use crate::mount::runs;
use crate::runs::TEST_WORKER;
use baton_client::Client as _;
use baton_core::{
    AgentRegistry, ChunkKind, Message, StreamChunk,
    message::ToolOutcome,
    store::SessionAddress,
    subagent::{RemoteAgent, SubAgent},
};
use baton_tests::WorkerProcess;
use baton_tests::{
    Harness, WAIT_LIMIT, agents, keyed_options,
    remote_agents::{self, delegating},
    tool_outcomes,
};
use serde_json::{Value, json};
use std::{collections::HashSet, sync::Arc, time::Duration};
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

/// The producer's `two_steps` at `harness_address`'s mount, retrying quickly.
pub(crate) fn remote_two_steps(harness_address: &str) -> RemoteAgent {
    remote_agents::remote(&format!("http://{harness_address}/agents"), "two_steps")
}

/// Starts a session of the consumer's `agent_type`.
pub(crate) async fn start(consumer: &Harness, agent_type: &str) -> baton_core::api::StartResponse {
    consumer.client.start(agent_type, "go").await.unwrap()
}

/// Runs one session of the consumer's `agent_type` to its end: its start, its stream and its
/// log.
pub(crate) async fn run_to_end(
    consumer: &Harness,
    agent_type: &str,
) -> (
    baton_core::api::StartResponse,
    Vec<StreamChunk>,
    Vec<Message>,
) {
    let started = start(consumer, agent_type).await;
    let chunks = consumer
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    let log = consumer.messages(&started.session_id).await;
    (started, chunks, log)
}

/// [`run_to_end`] of `remote_delegator`.
pub(crate) async fn delegate(
    consumer: &Harness,
) -> (
    baton_core::api::StartResponse,
    Vec<StreamChunk>,
    Vec<Message>,
) {
    run_to_end(consumer, "remote_delegator").await
}

/// The forwarded chunks of a stream: those with a `remoteSource`.
pub(crate) fn forwarded(chunks: &[StreamChunk]) -> Vec<&StreamChunk> {
    chunks
        .iter()
        .filter(|c| c.remote_source.is_some())
        .collect()
}

/// The forwarded `copies` are the producer's chunks of `child` before its end, each once, in
/// the child's order, less its turns' ends (`suspended` and `end`, which the caller's stream
/// would read as its own) (`producer` the producer's store).
pub(crate) async fn assert_forwarded_once_in_order(
    producer: &baton_core::Store,
    child: &str,
    copies: &[&StreamChunk],
) {
    let own = producer
        .chunks_after(&SessionAddress::root(child), 0, 1000)
        .await
        .unwrap();
    let expected: Vec<u64> = own
        .iter()
        .filter(|c| !matches!(c.kind, ChunkKind::End { .. } | ChunkKind::Suspended { .. }))
        .map(|c| c.sequence)
        .collect();
    let got: Vec<u64> = copies
        .iter()
        .map(|c| c.remote_source.as_ref().unwrap().child_sequence)
        .collect();
    assert_eq!(got, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_child_runs_once_on_the_producer_and_its_chunks_reach_the_caller_stamped_once() {
    let producer = Harness::start(agents::registry()).await;
    let remote = remote_two_steps(&producer.address.to_string());
    let consumer = Harness::start(delegating(SubAgent::remote("research", "asks", remote))).await;
    let (started, chunks, log) = delegate(&consumer).await;
    crate::subagents::assert_completed(&chunks, "got BATON says hello");
    let root = SessionAddress::root(&started.session_id);
    let child = consumer
        .store
        .remote_child_id(&root, &first_call_id(&log))
        .await
        .unwrap();
    assert_eq!(
        tool_outcomes(&log),
        [&ToolOutcome::Result(json!("BATON says hello"))]
    );

    // The caller's stream announces the child, forwards its chunks, then closes it.
    let kinds: Vec<&str> = chunks.iter().map(|c| c.kind.name()).collect();
    let start = kinds.iter().position(|k| *k == "subagent_start").unwrap();
    let end = kinds.iter().position(|k| *k == "subagent_end").unwrap();
    let copies = forwarded(&chunks);
    assert!(copies.len() >= 8, "{kinds:?}");
    let mut pairs = HashSet::new();
    let mut last = 0;
    for copy in &copies {
        let source = copy.remote_source.as_ref().unwrap();
        assert_eq!(source.child_session_id, child);
        assert_eq!(
            copy.header.agent_id, child,
            "agentId names the emitting session"
        );
        assert_eq!(
            copy.header.stream_id, started.stream_id,
            "a chunk names its stream"
        );
        assert!(pairs.insert((source.child_session_id.clone(), source.child_sequence)));
        assert!(source.child_sequence > last, "in the child's order");
        last = source.child_sequence;
        let at = chunks
            .iter()
            .position(|c| c.sequence == copy.sequence)
            .unwrap();
        assert!(start < at && at < end);
        assert!(!matches!(
            copy.kind,
            ChunkKind::End { .. } | ChunkKind::Suspended { .. }
        ));
    }
    // Exactly what the child streamed before its end, in its own order.
    let producer_session = SessionAddress::root(&child);
    assert_forwarded_once_in_order(&producer.store, &child, &copies).await;

    // One child on the producer; the caller's rollup counts its tools once.
    assert_eq!(runs(&producer, 1).await, 1);
    let rollup = consumer.store.usage_rollup(&root).await.unwrap().unwrap();
    assert_eq!(rollup.tool_calls.get("add"), Some(&2));
    assert_eq!(rollup.tool_calls.get("research"), Some(&1));
    let child_rollup = producer
        .store
        .usage_rollup(&producer_session)
        .await
        .unwrap()
        .unwrap();
    let own_rollup = consumer
        .store
        .own_usage_rollup(&root)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        rollup.tokens.input_tokens,
        own_rollup.tokens.input_tokens + child_rollup.tokens.input_tokens
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_that_is_down_fails_the_call_with_remote_unavailable_after_its_retries() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = closed.local_addr().unwrap().to_string();
    drop(closed);
    let mut remote = remote_two_steps(&address);
    remote.max_retries = 2;
    let consumer = Harness::start(delegating(SubAgent::remote("research", "asks", remote))).await;
    let (_, chunks, log) = delegate(&consumer).await;
    assert!(forwarded(&chunks).is_empty());
    let [ToolOutcome::Error(error)] = tool_outcomes(&log)[..] else {
        panic!("one failed call: {log:?}");
    };
    assert_unavailable_after_three_attempts(error);
}

/// The id of the first tool call of a log.
pub(crate) fn first_call_id(log: &[Message]) -> String {
    log.iter()
        .find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => tool_calls.first().map(|c| c.id.clone()),
            _ => None,
        })
        .expect("the log has a tool call")
}

/// `error` is a producer's unavailability after a first attempt and two retries.
pub(crate) fn assert_unavailable_after_three_attempts(error: &baton_core::message::ToolError) {
    assert_eq!(error.code, "remote_unavailable");
    assert!(
        error.message.contains("after 3 attempts"),
        "{}",
        error.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_refusing_the_credential_is_relayed_and_the_right_bearer_is_let_in() {
    let producer = Harness::start_with(agents::registry(), keyed_options("producer-key")).await;
    let address = producer.address.to_string();
    for (bearer, expected) in [
        (None, Err("unauthorized")),
        (Some("wrong"), Err("unauthorized")),
        (Some("producer-key"), Ok(())),
    ] {
        let url = format!("http://{address}/agents");
        let mut remote = remote_agents::remote_without_credential(&url, "two_steps");
        if let Some(bearer) = bearer {
            remote = remote.bearer(bearer);
        }
        let consumer =
            Harness::start(delegating(SubAgent::remote("research", "asks", remote))).await;
        let (_, _, log) = delegate(&consumer).await;
        match (expected, &tool_outcomes(&log)[..]) {
            (Err(code), [ToolOutcome::Error(error)]) => assert_eq!(error.code, code),
            (Ok(()), [ToolOutcome::Result(value)]) => assert_eq!(value, &json!("BATON says hello")),
            (expected, got) => panic!("{bearer:?}: expected {expected:?}, got {got:?}"),
        }
    }
    // Only the call with the credential started a child.
    assert_eq!(runs(&producer, 1).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_outside_the_tools_schema_is_a_tool_error() {
    let producer = Harness::start(agents::registry()).await;
    let remote = remote_two_steps(&producer.address.to_string());
    let sub_agent = SubAgent::remote("research", "asks", remote)
        .output_schema(json!({"type": "object"}))
        .unwrap();
    let consumer = Harness::start(delegating(sub_agent)).await;
    let (_, _, log) = delegate(&consumer).await;
    let [ToolOutcome::Error(error)] = tool_outcomes(&log)[..] else {
        panic!("one failed call: {log:?}");
    };
    assert_eq!(error.code, "invalid_sub_agent_output");
}

/// The forwarded chunks of `harness`'s session `session_id` once one is a `tool_start` of
/// `tool`: the consumer is following the child then.
async fn forwarded_until_tool_start(harness: &Harness, session_id: &str, tool: &str) {
    let address = SessionAddress::root(session_id);
    let started = async {
        loop {
            let chunks = harness.store.chunks_after(&address, 0, 1000).await.unwrap();
            let seen = forwarded(&chunks).iter().any(
                |c| matches!(&c.kind, ChunkKind::ToolStart { tool_name, .. } if tool_name == tool),
            );
            if seen {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, started)
        .await
        .expect("the consumer forwards the child's tool_start in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_worker_killed_while_following_is_replaced_and_no_chunk_or_child_repeats() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let producer =
        Harness::start(AgentRegistry::new([remote_agents::gated(gate.clone())]).unwrap()).await;
    let url = format!("http://{}/agents", producer.address);
    let remote = remote_agents::remote(&url, "gated");
    let consumer =
        Harness::server_only(delegating(SubAgent::remote("research", "asks", remote))).await;
    let env = [
        (remote_agents::REMOTE_URL_ENV, url.as_str()),
        (remote_agents::REMOTE_AGENT_ENV, "gated"),
    ];
    let first = WorkerProcess::spawn_with_env(TEST_WORKER, &consumer, false, &env);
    let started = start(&consumer, "remote_delegator").await;
    forwarded_until_tool_start(&consumer, &started.session_id, "gate").await;

    // The worker following the child dies; another takes the call over and reads on.
    drop(first);
    let _second = WorkerProcess::spawn_with_env(TEST_WORKER, &consumer, false, &env);
    gate.add_permits(1);
    let chunks = consumer
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    crate::subagents::assert_completed(&chunks, "got opened");

    // Every chunk of the child once, in its order; the child started once.
    let copies = forwarded(&chunks);
    let child = &copies[0].remote_source.as_ref().unwrap().child_session_id;
    assert_forwarded_once_in_order(&producer.store, child, &copies).await;
    assert_eq!(runs(&producer, 1).await, 1);
    let kinds: Vec<&str> = chunks.iter().map(|c| c.kind.name()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "subagent_start").count(), 1);
    assert_eq!(kinds.iter().filter(|k| **k == "subagent_end").count(), 1);

    // The call was taken over: its activity's completed attempt is a retry.
    let workflow_id =
        baton_core::ids::first_run_workflow_id("remote_delegator", &started.session_id);
    let events = crate::round_cost::history(&consumer, &workflow_id).await;
    let attempts: Vec<i32> = events
        .iter()
        .filter_map(|event| match &event.attributes {
            Some(Attributes::ActivityTaskStartedEventAttributes(started)) => Some(started.attempt),
            _ => None,
        })
        .collect();
    assert!(attempts.iter().any(|attempt| *attempt >= 2), "{attempts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_of_the_caller_is_passed_on_to_the_remote_child() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let producer =
        Harness::start(AgentRegistry::new([remote_agents::gated(gate.clone())]).unwrap()).await;
    let url = format!("http://{}/agents", producer.address);
    let remote = remote_agents::remote(&url, "gated");
    let consumer = Harness::start(delegating(SubAgent::remote("research", "asks", remote))).await;
    let started = start(&consumer, "remote_delegator").await;
    forwarded_until_tool_start(&consumer, &started.session_id, "gate").await;
    let root = SessionAddress::root(&started.session_id);
    let call_id = consumer
        .store
        .chunks_after(&root, 0, 1000)
        .await
        .unwrap()
        .into_iter()
        .find_map(|c| match c.kind {
            ChunkKind::SubagentStart { tool_call_id, .. } => Some(tool_call_id),
            _ => None,
        })
        .unwrap();
    let child = SessionAddress::root(
        consumer
            .store
            .remote_child_id(&root, &call_id)
            .await
            .unwrap(),
    );

    consumer.interrupt(&started.session_id).await;
    // The consumer's cancelled follower interrupts the child on the producer.
    let interrupted = async {
        loop {
            let state = producer.store.session(&child).await.unwrap().unwrap();
            if state.status == baton_core::store::Status::Interrupted {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, interrupted)
        .await
        .expect("the remote child is interrupted in time");
    gate.add_permits(1);
}

/// A consumer whose `remote_expedition` calls the producer's `scout` as `research` and folds
/// the scout's find and status into its own state.
pub(crate) fn remote_expedition(remote: RemoteAgent) -> AgentRegistry {
    let model = baton_core::ScriptedModel::default()
        .call("research", json!({"message": "look"}))
        .answer("scout says {{result:research}}");
    let agent = baton_core::Agent::builder("remote_expedition")
        .model(model)
        .state::<baton_tests::state_agents::Expedition>()
        .sub_agent_with(SubAgent::remote("research", "looks", remote))
        .after_sub_agent(|ended| {
            let found = ended.state.and_then(|state| state.get("found")).cloned();
            vec![
                baton_core::state::StateSet::new("/found", found),
                baton_core::state::StateSet::new("/scoutStatus", <&str>::from(ended.status)),
            ]
        })
        .build()
        .unwrap();
    AgentRegistry::new([agent]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_childs_state_folds_into_the_caller_unless_it_is_over_the_cap() {
    let producer = Harness::start(agents::registry()).await;
    let url = format!("http://{}/agents", producer.address);
    for (cap, found) in [(262_144, json!("gold")), (8, Value::Null)] {
        let mut remote = remote_agents::remote(&url, "scout");
        remote.max_fold_state_bytes = cap;
        let consumer = Harness::start(remote_expedition(remote)).await;
        let (started, chunks, _) = run_to_end(&consumer, "remote_expedition").await;
        // Over the cap only the state's fold is skipped: the output still answers the call.
        crate::subagents::assert_completed(&chunks, "scout says found it");
        let state = consumer
            .store
            .custom_state(&SessionAddress::root(&started.session_id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(state["found"], found, "cap {cap}");
        assert_eq!(state["scoutStatus"], "completed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_its_producer_lost_fails_the_call_with_producer_dead() {
    // A producer without a worker: its child's workflow waits, then is lost (terminated), so
    // the session stays running with nothing executing it.
    let producer = Harness::server_only(agents::registry()).await;
    let mut remote = remote_two_steps(&producer.address.to_string());
    remote.read_timeout = Duration::from_millis(300);
    remote.dead_after_attaches = 2;
    let consumer = Harness::start(delegating(SubAgent::remote("research", "asks", remote))).await;
    let started = start(&consumer, "remote_delegator").await;
    let root = SessionAddress::root(&started.session_id);
    let announced = async {
        loop {
            let chunks = consumer.store.chunks_after(&root, 0, 1000).await.unwrap();
            let call = chunks.into_iter().find_map(|c| match c.kind {
                ChunkKind::SubagentStart { tool_call_id, .. } => Some(tool_call_id),
                _ => None,
            });
            if let Some(call) = call {
                return call;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let call_id = tokio::time::timeout(WAIT_LIMIT, announced).await.unwrap();
    let child = consumer
        .store
        .remote_child_id(&root, &call_id)
        .await
        .unwrap();
    producer
        .temporal
        .get_workflow_handle::<baton_workflows::AgentRunWorkflow>(
            baton_core::ids::first_run_workflow_id("two_steps", &child),
        )
        .terminate(temporalio_client::WorkflowTerminateOptions::default())
        .await
        .unwrap();

    consumer
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    let log = consumer.messages(&started.session_id).await;
    let [ToolOutcome::Error(error)] = tool_outcomes(&log)[..] else {
        panic!("one failed call: {log:?}");
    };
    assert_eq!(error.code, "producer_dead");
    let status =
        crate::remote_relay::status_of(&producer.store, &SessionAddress::root(&child)).await;
    assert_eq!(status, baton_core::store::Status::Active);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_worker_killed_under_the_child_is_replaced_and_the_call_still_answers() {
    let producer = Harness::server_only(agents::registry()).await;
    let holding = WorkerProcess::spawn(TEST_WORKER, &producer, true);
    let remote = remote_agents::remote(&format!("http://{}/agents", producer.address), "holder");
    let consumer = Harness::start(delegating(SubAgent::remote("research", "asks", remote))).await;
    let started = start(&consumer, "remote_delegator").await;
    // The producer's worker dies holding the child's tool; another runs it again.
    let _replacement = holding.replace_when_holding(TEST_WORKER, &producer).await;
    let chunks = consumer
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    crate::subagents::assert_completed(&chunks, "got released: done");
    let copies = forwarded(&chunks);
    let child = &copies[0].remote_source.as_ref().unwrap().child_session_id;
    assert_forwarded_once_in_order(&producer.store, child, &copies).await;
    assert_eq!(runs(&producer, 1).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_callers_user_tags_and_metadata_are_forwarded_to_the_remote_child() {
    let producer = Harness::start(agents::registry()).await;
    let remote = remote_two_steps(&producer.address.to_string());
    let consumer = Harness::start(delegating(SubAgent::remote("research", "asks", remote))).await;
    let mut request = baton_core::api::StartRequest::new("remote_delegator", "go");
    request.user_id = Some("user-7".into());
    request.tags = vec!["vip".into()];
    request.metadata = Some(json!({"traceId": "t-1"}).as_object().unwrap().clone());
    let started = consumer.client.start_request(request).await.unwrap();
    let chunks = consumer
        .chunks_until_end(&started.session_id, WAIT_LIMIT)
        .await;
    let child = &forwarded(&chunks)[0]
        .remote_source
        .as_ref()
        .unwrap()
        .child_session_id;
    let meta = producer
        .store
        .session_meta(&SessionAddress::root(child))
        .await
        .unwrap();
    assert_eq!(meta.user_id.as_deref(), Some("user-7"));
    assert_eq!(meta.tags, ["vip"]);
    assert_eq!(meta.metadata.unwrap()["traceId"], "t-1");
}

//! People across the boundary: a remote child that waits for a person (a question, then an
//! approval) suspends its caller; the consumer's root lists the child's calls under tree-unique
//! `bt_` ids and takes their answers, relayed to the producer (a refused one writing nothing on
//! either side); the root's resume continues the child first, and the child's end answers and
//! resumes its caller, the tree running to its end with each child chunk once on the caller's
//! stream and one child on the producer. A consumer worker killed between the pause and the
//! answer changes nothing (no workflow runs meanwhile).

use crate::mount::runs;
use crate::remote::{forwarded, start};
use crate::runs::TEST_WORKER;
use baton_client::{Client as _, HttpClient};
use baton_core::{
    Agent, AgentRegistry, ScriptedModel, Store, StreamChunk,
    message::ToolOutcome,
    search::{PendingDetail, PersonCallKind, SessionSearch},
    session::ApprovalDecision,
    store::{IndexQuery, IndexScope, IndexTerm, SessionAddress, Status},
    subagent::SubAgent,
    submit::SubmitStatus,
};
use baton_tests::{
    Harness, WAIT_LIMIT, WorkerProcess, api_error, chunks_through,
    remote_agents::{self, delegating},
};
use serde_json::json;
use std::{collections::HashSet, time::Duration};

/// A producer serving `ask_then_approve`, and its mount's URL.
pub(crate) async fn producer() -> (Harness, String) {
    let registry = AgentRegistry::new([remote_agents::ask_then_approve()]).unwrap();
    let producer = Harness::start(registry).await;
    let url = format!("http://{}/agents", producer.address);
    (producer, url)
}

/// The consumer's registry: `remote_delegator` calling the producer's `ask_then_approve`.
pub(crate) fn consumer_registry(url: &str) -> AgentRegistry {
    let remote = remote_agents::remote(url, "ask_then_approve");
    delegating(SubAgent::remote("research", "asks", remote))
}

/// The calls the consumer's root `root` lists as waiting on a person (`/pending`).
async fn pending(consumer: &HttpClient, root: &str) -> Vec<PendingDetail> {
    let search = SessionSearch {
        root: Some(root.to_owned()),
        ..SessionSearch::default()
    };
    consumer.pending(&search).await.unwrap().calls
}

/// Waits until the root lists one call of `kind` waiting on a person, and answers it.
pub(crate) async fn one_pending(
    consumer: &HttpClient,
    root: &str,
    kind: PersonCallKind,
) -> PendingDetail {
    let listed = async {
        loop {
            let calls = pending(consumer, root).await;
            if let [call] = &calls[..]
                && call.kind == kind
            {
                return call.clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, listed)
        .await
        .expect("the root lists the remote child's call in time")
}

/// Whether the consumer's search index itself (before a search's read-back) holds `root` under
/// `awaiting=person`.
async fn indexed_as_awaiting(consumer: &Store, root: &str) -> bool {
    let query = IndexQuery {
        drive: IndexTerm::Awaiting,
        required: Vec::new(),
        scopes: vec![IndexScope::Roots],
        after: None,
        updated_before: None,
        updated_after: None,
        limit: 100,
    };
    let page = consumer.search_index(&query).await.unwrap();
    page.hits.iter().any(|hit| hit.session_id == root)
}

/// Waits until the index holds `root` under `awaiting=person` or not, as `awaiting` says.
async fn until_indexed_as_awaiting(consumer: &Store, root: &str, awaiting: bool) {
    let followed = async {
        while indexed_as_awaiting(consumer, root).await != awaiting {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, followed)
        .await
        .expect("the search index follows the relayed calls in time");
}

/// The ids of the sessions a service lists (`/sessions`, unfiltered).
pub(crate) async fn sessions_on(service: &HttpClient) -> Vec<String> {
    let page = service.sessions(&SessionSearch::default()).await.unwrap();
    page.sessions.into_iter().map(|s| s.session_id).collect()
}

/// The status of the producer's session `child` (`producer` the producer's store).
pub(crate) async fn status_of(producer: &Store, child: &SessionAddress) -> Status {
    producer.session(child).await.unwrap().unwrap().status
}

/// The remote child's id, from the caller's `subagent_start` (`consumer` the caller's store).
pub(crate) async fn child_of(consumer: &Store, root: &str) -> String {
    let chunks = consumer
        .chunks_after(&SessionAddress::root(root), 0, 1000)
        .await
        .unwrap();
    let call_id = chunks
        .into_iter()
        .find_map(|c| match c.kind {
            baton_core::ChunkKind::SubagentStart { tool_call_id, .. } => Some(tool_call_id),
            _ => None,
        })
        .expect("the child is announced");
    consumer
        .remote_child_id(&SessionAddress::root(root), &call_id)
        .await
        .unwrap()
}

/// Each forwarded chunk's `(childSessionId, childSequence)` is on `chunks` once.
fn assert_each_forwarded_once(chunks: &[StreamChunk]) {
    let mut seen = HashSet::new();
    for copy in forwarded(chunks) {
        let source = copy.remote_source.as_ref().unwrap();
        assert!(
            seen.insert((source.child_session_id.clone(), source.child_sequence)),
            "{source:?} twice"
        );
    }
    assert!(!seen.is_empty());
}

/// The two sides of a remote call a person answers: the consumer (its API and its keys), the
/// producer's keys, and the producer's tool that waits for the approval.
pub(crate) struct Sides<'a> {
    pub(crate) consumer: &'a HttpClient,
    pub(crate) consumer_store: &'a Store,
    pub(crate) producer_store: &'a Store,
    pub(crate) approved_tool: &'a str,
}

impl<'a> Sides<'a> {
    /// Two harnesses, the producer serving `ask_then_approve`.
    fn of(consumer: &'a Harness, producer: &'a Harness) -> Self {
        Self {
            consumer: &consumer.client,
            consumer_store: &consumer.store,
            producer_store: &producer.store,
            approved_tool: "transfer",
        }
    }
}

/// The ids of the calls the root's `/status` lists as waiting on a person.
async fn listed_by_status(consumer: &HttpClient, root: &str) -> Vec<String> {
    let status = consumer.status(root).await.unwrap();
    status.pending.into_iter().map(|c| c.tool_call_id).collect()
}

/// Answers the child's question (after a refused answer), then its approval, through the
/// consumer's root, resuming the root after each; reads the root's stream to its end.
pub(crate) async fn answer_both_through_the_root(
    sides: &Sides<'_>,
    root: &str,
) -> Vec<StreamChunk> {
    let consumer = sides.consumer;
    let question = one_pending(consumer, root, PersonCallKind::ClientTool).await;
    assert!(question.tool_call_id.starts_with("bt_"), "{question:?}");
    assert_eq!(question.session_id, root);
    assert_eq!(question.tool_name, "ask_user");
    assert_eq!(question.input, json!({"question": "Name?"}));
    // The root's `/status` lists the same call, under the same id.
    assert_eq!(
        listed_by_status(consumer, root).await,
        std::slice::from_ref(&question.tool_call_id)
    );
    let child = SessionAddress::root(child_of(sides.consumer_store, root).await);
    until_indexed_as_awaiting(sides.consumer_store, root, true).await;

    // The producer's refusal is relayed as it is; nothing is written on either side.
    let before = consumer.status(root).await.unwrap();
    let refused = consumer
        .submit(
            root,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"wrong": 1})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(refused).code.as_str(), "INVALID_RESULT");
    let after = consumer.status(root).await.unwrap();
    assert_eq!(
        serde_json::to_value(&before).unwrap(),
        serde_json::to_value(&after).unwrap()
    );
    let still: Vec<String> = pending(consumer, root)
        .await
        .into_iter()
        .map(|call| call.tool_call_id)
        .collect();
    assert_eq!(still, std::slice::from_ref(&question.tool_call_id));
    assert!(
        sides
            .producer_store
            .answers(&child)
            .await
            .unwrap()
            .is_empty()
    );
    // While the question is open the root's resume is refused, naming it.
    let early = api_error(consumer.resume(root).await.unwrap_err());
    assert_eq!(early.code.as_str(), "state_not_resumable");
    assert!(
        early.error.contains(&question.tool_call_id),
        "{}",
        early.error
    );

    let stored = consumer
        .submit(
            root,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"answer": "Ada"})),
        )
        .await
        .unwrap();
    assert_eq!(stored.status, SubmitStatus::Accepted);
    assert_eq!(
        serde_json::to_value(&stored.continuation).unwrap()["kind"],
        "caller_resumes"
    );
    assert!(pending(consumer, root).await.is_empty());
    // The index follows the relayed answer: the root no longer waits on a person.
    until_indexed_as_awaiting(sides.consumer_store, root, false).await;
    assert_eq!(sides.producer_store.answers(&child).await.unwrap().len(), 1);
    consumer.resume(root).await.unwrap();

    // The child goes on, and asks for an approval: a new call under a new id.
    let approval = one_pending(consumer, root, PersonCallKind::Approval).await;
    assert!(approval.tool_call_id.starts_with("bt_"), "{approval:?}");
    assert_ne!(approval.tool_call_id, question.tool_call_id);
    assert_eq!(approval.tool_name, sides.approved_tool);
    assert_eq!(
        listed_by_status(consumer, root).await,
        std::slice::from_ref(&approval.tool_call_id)
    );
    let approval_id = approval.approval_id.clone().unwrap();
    assert!(
        approval_id.ends_with(&format!("::{}", approval.tool_call_id)),
        "{approval_id}"
    );
    let decision = ApprovalDecision {
        approved: true,
        reason: None,
        arguments: None,
    };
    consumer
        .submit_approval(root, &approval.tool_call_id, &approval_id, &decision)
        .await
        .unwrap();
    consumer.resume(root).await.unwrap();
    chunks_through(consumer, root, 0, WAIT_LIMIT, false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_childs_question_then_approval_are_answered_through_the_consumers_root() {
    let (producer, url) = producer().await;
    let consumer = Harness::start(consumer_registry(&url)).await;
    let started = start(&consumer, "remote_delegator").await;
    let root = started.session_id.clone();

    let chunks = answer_both_through_the_root(&Sides::of(&consumer, &producer), &root).await;
    crate::subagents::assert_completed(&chunks, r#"got {"answer":"Ada"} / sent 10 to alice"#);
    assert_each_forwarded_once(&chunks);
    let kinds: Vec<&str> = chunks.iter().map(|c| c.kind.name()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "subagent_start").count(), 1);
    assert_eq!(kinds.iter().filter(|k| **k == "subagent_end").count(), 1);
    // One child on the producer, which ran three runs (its start, then two resumes).
    let child = SessionAddress::root(child_of(&consumer.store, &root).await);
    assert_eq!(status_of(&producer.store, &child).await, Status::Completed);
    assert_eq!(runs(&producer, 3).await, 3);
    assert!(pending(&consumer.client, &root).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_worker_killed_between_the_pause_and_the_answer_still_completes() {
    let (producer, url) = producer().await;
    let consumer = Harness::server_only(consumer_registry(&url)).await;
    let env = [
        (remote_agents::REMOTE_URL_ENV, url.as_str()),
        (remote_agents::REMOTE_AGENT_ENV, "ask_then_approve"),
    ];
    let first = WorkerProcess::spawn_with_env(TEST_WORKER, &consumer, false, &env);
    let started = start(&consumer, "remote_delegator").await;
    let root = started.session_id.clone();
    one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;

    // The pause holds nothing: the worker that ran the caller dies, another serves the rest.
    drop(first);
    let _second = WorkerProcess::spawn_with_env(TEST_WORKER, &consumer, false, &env);
    let chunks = answer_both_through_the_root(&Sides::of(&consumer, &producer), &root).await;
    crate::subagents::assert_completed(&chunks, r#"got {"answer":"Ada"} / sent 10 to alice"#);
    assert_each_forwarded_once(&chunks);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_that_paused_folds_into_its_caller_when_it_completes() {
    let (producer, url) = producer().await;
    let remote = remote_agents::remote(&url, "ask_then_approve");
    let consumer = Harness::start(crate::remote::remote_expedition(remote)).await;
    let started = start(&consumer, "remote_expedition").await;
    let root = started.session_id.clone();
    let chunks = answer_both_through_the_root(&Sides::of(&consumer, &producer), &root).await;
    crate::subagents::assert_completed(
        &chunks,
        r#"scout says {"answer":"Ada"} / sent 10 to alice"#,
    );
    // The caller's after_sub_agent hook saw the child's completed end.
    let state = consumer
        .store
        .custom_state(&SessionAddress::root(&root))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state["scoutStatus"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_of_a_caller_waiting_on_a_paused_child_interrupts_the_child() {
    let (producer, url) = producer().await;
    let consumer = Harness::start(consumer_registry(&url)).await;
    let started = start(&consumer, "remote_delegator").await;
    let root = started.session_id.clone();
    one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;
    let child = SessionAddress::root(child_of(&consumer.store, &root).await);

    // No follower runs while the child waits: the stop itself passes the interrupt on.
    consumer.interrupt(&root).await;
    assert!(pending(&consumer.client, &root).await.is_empty());
    let child_state = producer.store.session(&child).await.unwrap().unwrap();
    assert_eq!(child_state.status, Status::Interrupted);
}

/// `outer`, whose local child `remote_delegator` calls the producer's `ask_then_approve`.
fn nested(url: &str) -> AgentRegistry {
    let remote = remote_agents::remote(url, "ask_then_approve");
    let middle = remote_agents::delegator(SubAgent::remote("research", "asks", remote));
    let outer = Agent::builder("outer")
        .model(
            ScriptedModel::default()
                .call("subagent__remote_delegator", json!({"message": "go"}))
                .answer("outer got {{result:subagent__remote_delegator}}"),
        )
        .sub_agent("remote_delegator", "Delegates.")
        .max_steps(4)
        .build()
        .unwrap();
    AgentRegistry::new([outer, middle]).unwrap()
}

/// The root's own `suspended` chunks on its stream (by sequence), once there are `at_least`.
async fn root_suspended(consumer: &Harness, root: &str, at_least: usize) -> Vec<u64> {
    let written = async {
        loop {
            let suspensions = root_suspensions(consumer, root).await;
            if suspensions.len() >= at_least {
                return suspensions;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, written)
        .await
        .expect("the root suspends in time")
}

/// The root's own `suspended` chunks on its stream, by sequence.
async fn root_suspensions(consumer: &Harness, root: &str) -> Vec<u64> {
    let address = SessionAddress::root(root);
    let chunks = consumer
        .store
        .chunks_after(&address, 0, 10_000)
        .await
        .unwrap();
    chunks
        .iter()
        .filter(|c| c.header.agent_id == root)
        .filter(|c| matches!(c.kind, baton_core::ChunkKind::Suspended { .. }))
        .map(|c| c.sequence)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_child_below_a_local_child_that_pauses_again_suspends_the_root_again() {
    let (_producer, url) = producer().await;
    let consumer = Harness::start(nested(&url)).await;
    let root = start(&consumer, "outer").await.session_id;
    let question = one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;
    let first = root_suspended(&consumer, &root, 1).await;
    assert_eq!(first.len(), 1, "{first:?}");
    let answer = ToolOutcome::Result(json!({"answer": "Ada"}));
    consumer
        .client
        .submit(&root, &question.tool_call_id, &answer)
        .await
        .unwrap();
    consumer.client.resume(&root).await.unwrap();

    // The remote child asks for the approval: the root's stream says the tree waits again, with
    // the root's header and the relayed call's id.
    let approval = one_pending(&consumer.client, &root, PersonCallKind::Approval).await;
    let suspensions = root_suspended(&consumer, &root, 2).await;
    assert_eq!(suspensions.len(), 2, "{suspensions:?}");
    let address = SessionAddress::root(&root);
    let after = consumer
        .store
        .chunks_after(&address, first[0], 10_000)
        .await
        .unwrap();
    let repeated = after.iter().find(|c| c.sequence == suspensions[1]).unwrap();
    let root_state = consumer.store.session(&address).await.unwrap().unwrap();
    assert_eq!(repeated.header.run_id, root_state.run_id);
    assert_eq!(repeated.header.stream_id, root_state.stream_id);
    match &repeated.kind {
        baton_core::ChunkKind::Suspended { tool_call_ids, .. } => {
            assert_eq!(tool_call_ids, std::slice::from_ref(&approval.tool_call_id));
        }
        other => panic!("{other:?}"),
    }

    let decision = ApprovalDecision {
        approved: true,
        reason: None,
        arguments: None,
    };
    let approval_id = approval.approval_id.clone().unwrap();
    consumer
        .client
        .submit_approval(&root, &approval.tool_call_id, &approval_id, &decision)
        .await
        .unwrap();
    consumer.client.resume(&root).await.unwrap();
    let chunks = chunks_through(&consumer.client, &root, 0, WAIT_LIMIT, false).await;
    crate::subagents::assert_completed(
        &chunks,
        r#"outer got got {"answer":"Ada"} / sent 10 to alice"#,
    );
    // Nothing more: the tree's end wrote no third suspension.
    assert_eq!(root_suspensions(&consumer, &root).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_stop_interrupts_the_paused_remote_child_of_a_session_below_it() {
    let (producer, url) = producer().await;
    let consumer = Harness::start(nested(&url)).await;
    let root = start(&consumer, "outer").await.session_id;
    // The question of the remote child of the root's local child, listed on the root once.
    let question = one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;
    // A filter that leaves the root's row out still lists it, once, under the root.
    let filtered = SessionSearch {
        root: Some(root.clone()),
        agent: Some("remote_delegator".to_owned()),
        ..SessionSearch::default()
    };
    let calls = consumer.client.pending(&filtered).await.unwrap().calls;
    let [call] = &calls[..] else {
        panic!("the call once: {calls:?}")
    };
    assert_eq!(
        (&call.session_id, &call.owner_session_id, &call.tool_call_id),
        (&root, &question.owner_session_id, &question.tool_call_id)
    );
    let children = sessions_on(&producer.client).await;
    let [child] = &children[..] else {
        panic!("one child on the producer: {children:?}")
    };
    let child = SessionAddress::root(child.clone());
    assert_eq!(
        status_of(&producer.store, &child).await,
        Status::SuspendedClientTool
    );

    // The root's stop reaches the session below it, which waits holding no follower: the stop
    // passes the interrupt on to its remote child.
    consumer.interrupt(&root).await;
    assert!(pending(&consumer.client, &root).await.is_empty());
    let child_state = producer.store.session(&child).await.unwrap().unwrap();
    assert_eq!(child_state.status, Status::Interrupted);
}

/// Whether `error` is the refusal of a submit past the root's rate limit of one a minute:
/// `rate_limited`, retryable, with a retry hint within the minute.
fn is_over_one_a_minute(error: &baton_core::ApiError) -> bool {
    let hint = match error.refusal() {
        Some(baton_core::Refusal::RetryAfter { retry_after }) => retry_after,
        _ => 0,
    };
    error.code == baton_core::ErrorCode::RateLimited && error.retryable && (1..=60).contains(&hint)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_answer_spends_the_roots_submit_token_and_past_its_limit_nothing_is_relayed() {
    let (producer, url) = producer().await;
    let options = baton_worker::ServerOptions {
        submits_per_minute: Some(1),
        ..baton_tests::open_options()
    };
    let consumer = Harness::start_with(consumer_registry(&url), options).await;
    let root = start(&consumer, "remote_delegator").await.session_id;
    let question = one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;
    let child = SessionAddress::root(child_of(&consumer.store, &root).await);

    // The root's one token goes to a relayed answer, even one its producer refuses.
    let refused = |id: String, result: serde_json::Value| {
        let (client, root) = (&consumer.client, &root);
        async move {
            let answer = client.submit(root, &id, &ToolOutcome::Result(result)).await;
            api_error(answer.unwrap_err())
        }
    };
    let wrong = refused(question.tool_call_id.clone(), json!({"wrong": 1})).await;
    assert_eq!(wrong.code.as_str(), "INVALID_RESULT");

    // The next relayed answer is refused as a local one is, and reaches no producer.
    let before = consumer.client.status(&root).await.unwrap();
    let relayed = refused(question.tool_call_id.clone(), json!({"answer": "Ada"})).await;
    assert!(is_over_one_a_minute(&relayed), "{relayed:?}");
    let local = refused("call_9".to_owned(), json!({"answer": "Ada"})).await;
    assert!(is_over_one_a_minute(&local), "{local:?}");
    assert!(producer.store.answers(&child).await.unwrap().is_empty());
    assert_eq!(
        status_of(&producer.store, &child).await,
        Status::SuspendedClientTool
    );
    assert_eq!(consumer.client.status(&root).await.unwrap(), before);
    let still: Vec<String> = pending(&consumer.client, &root)
        .await
        .into_iter()
        .map(|call| call.tool_call_id)
        .collect();
    assert_eq!(still, [question.tool_call_id]);
}

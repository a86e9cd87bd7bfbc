//! Baton calling agents over A2A as sub-agents, against real servers: an agent served by the
//! official A2A Python SDK (`tests/a2a/agent_server.py`, `a2a-sdk` as scripts/services.sh pins
//! it) that asks for input once, with a bearer credential, and a second Baton serving
//! `ask_then_approve` over its own A2A endpoint. A task's `input-required` is relayed to the
//! consumer's root (a refused answer sending nothing), the person's answer goes as a message on
//! the task, the root's resume follows the task on, and its artifact answers the caller's call.

use crate::remote::{forwarded, start};
use crate::remote_relay::one_pending;
use baton_client::Client as _;
use baton_core::{
    AgentRegistry, ChunkKind,
    a2a::AGENT_CARD_PATH,
    message::ToolOutcome,
    search::PersonCallKind,
    session::ApprovalDecision,
    subagent::{A2aAgent, SubAgent},
    submit::SubmitStatus,
};
use baton_tests::{
    Harness, WAIT_LIMIT, api_error, chunks_through,
    remote_agents::{delegating, delegator},
};
use serde_json::json;
use std::time::Duration;

const TOKEN: &str = "a2a test token";

/// The Python SDK's agent on a free port, and its card's URL; killed when dropped.
async fn sdk_agent() -> (tokio::process::Child, String) {
    sdk_agent_with(&[]).await
}

/// [`sdk_agent`] with the script's flags (`no-stream`, `work=<seconds>`).
async fn sdk_agent_with(flags: &[&str]) -> (tokio::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("a2a/agent_server.py");
    let child = tokio::process::Command::new(baton_tests::mcp_agents::python())
        .arg(&script)
        .arg(port.to_string())
        .arg(TOKEN)
        .args(flags)
        .kill_on_drop(true)
        .spawn()
        .expect("the A2A agent starts");
    let card = format!("http://127.0.0.1:{port}{AGENT_CARD_PATH}");
    let up = async {
        while !reqwest::get(&card)
            .await
            .is_ok_and(|response| response.status().is_success())
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, up)
        .await
        .expect("the A2A agent serves its card in time");
    (child, card)
}

/// The declaration of the agent whose card is at `card`, retrying quickly.
fn declared(card: &str) -> A2aAgent {
    let mut agent = A2aAgent::new(card);
    agent.retry_base_delay = Duration::from_millis(20);
    agent.read_timeout = Duration::from_secs(5);
    agent.poll_interval = Duration::from_millis(50);
    agent
}

fn consumer_of(agent: A2aAgent) -> AgentRegistry {
    delegating(SubAgent::a2a("research", "asks over A2A", agent))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_sdk_agents_question_is_answered_through_the_consumers_root() {
    let (_agent, card) = sdk_agent().await;
    let consumer = Harness::start(consumer_of(declared(&card).bearer(TOKEN))).await;
    let root = start(&consumer, "remote_delegator").await.session_id;

    // The task's question is the root's call, with its text and the schema as a form.
    let question = one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;
    assert!(question.tool_call_id.starts_with("bt_r"), "{question:?}");
    assert_eq!(question.tool_name, "input_required");
    assert_eq!(question.input["question"], "What is your name?");
    assert_eq!(question.input["agent"], "research");
    let render = question.render.clone().expect("the schema renders a form");
    assert_eq!(render["kind"], "elicitation");
    assert_eq!(render["outputSchema"]["required"], json!(["name"]));

    // An answer the schema refuses is refused here; nothing is sent or written.
    let before = consumer.client.status(&root).await.unwrap();
    let refused = consumer
        .client
        .submit(
            &root,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"name": ""})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(refused).code.as_str(), "INVALID_RESULT");
    let after = consumer.client.status(&root).await.unwrap();
    assert_eq!(
        serde_json::to_value(&before).unwrap(),
        serde_json::to_value(&after).unwrap()
    );

    let stored = consumer
        .client
        .submit(
            &root,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"name": "Ada"})),
        )
        .await
        .unwrap();
    assert_eq!(stored.status, SubmitStatus::Accepted);
    // A second answer to the same question is not sent again.
    let again = consumer
        .client
        .submit(
            &root,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"name": "Bob"})),
        )
        .await
        .unwrap();
    assert_eq!(again.status, SubmitStatus::AlreadyCompleted);
    consumer.client.resume(&root).await.unwrap();

    let chunks = chunks_through(&consumer.client, &root, 0, WAIT_LIMIT, false).await;
    crate::subagents::assert_completed(&chunks, "got Hello, Ada!");
    // What the task said while working is on the caller's stream, stamped as the child's.
    let said: Vec<&str> = forwarded(&chunks)
        .into_iter()
        .filter_map(|chunk| match &chunk.kind {
            ChunkKind::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert!(said.contains(&"Looking into hello."), "{said:?}");
    assert_eq!(said.concat().matches("Hello, Ada!").count(), 1, "{said:?}");
    let kinds: Vec<&str> = chunks.iter().map(|c| c.kind.name()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "subagent_start").count(), 1);
    assert_eq!(kinds.iter().filter(|k| **k == "subagent_end").count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_credential_is_the_calls_tool_error_and_the_caller_goes_on() {
    let (_agent, card) = sdk_agent().await;
    let consumer = Harness::start(consumer_of(declared(&card).bearer("not the token"))).await;
    let root = start(&consumer, "remote_delegator").await.session_id;
    let chunks = consumer.chunks_until_end(&root, WAIT_LIMIT).await;
    assert!(matches!(
        chunks.last().map(|c| &c.kind),
        Some(ChunkKind::End { .. })
    ));
    let messages = consumer.messages(&root).await;
    let outcomes = baton_tests::tool_outcomes(&messages);
    let [ToolOutcome::Error(error)] = &outcomes[..] else {
        panic!("one failed call: {outcomes:?}")
    };
    assert_eq!(error.code, "tool_failed");
    assert!(error.message.contains("credential"), "{}", error.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_baton_agent_over_a2a_asks_twice_through_the_consumers_root() {
    let (_producer, url) = crate::remote_relay::producer().await;
    let card = format!("{url}/ask_then_approve{AGENT_CARD_PATH}");
    let agent = declared(&card).bearer(baton_tests::TEST_SERVICE_KEY);
    let consumer = Harness::start(
        AgentRegistry::new([delegator(SubAgent::a2a("research", "asks", agent))]).unwrap(),
    )
    .await;
    let client = &consumer.client;
    let root = start(&consumer, "remote_delegator").await.session_id;

    // Baton's own question crosses as it is: its tool, input and schema.
    let question = one_pending(client, &root, PersonCallKind::ClientTool).await;
    assert!(question.tool_call_id.starts_with("bt_r"), "{question:?}");
    assert_eq!(question.tool_name, "ask_user");
    assert_eq!(question.input, json!({"question": "Name?"}));
    // The producer's refusal comes back with its code.
    let refused = client
        .submit(
            &root,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"wrong": 1})),
        )
        .await
        .unwrap_err();
    assert_eq!(api_error(refused).code.as_str(), "INVALID_RESULT");
    let answer = ToolOutcome::Result(json!({"answer": "Ada"}));
    let stored = client
        .submit(&root, &question.tool_call_id, &answer)
        .await
        .unwrap();
    assert_eq!(stored.status, SubmitStatus::Accepted);
    client.resume(&root).await.unwrap();

    let approval = one_pending(client, &root, PersonCallKind::Approval).await;
    assert_eq!(approval.tool_name, "transfer");
    assert_ne!(approval.tool_call_id, question.tool_call_id);
    let decision = ApprovalDecision {
        approved: true,
        reason: None,
        arguments: None,
    };
    let approval_id = approval.approval_id.clone().unwrap();
    client
        .submit_approval(&root, &approval.tool_call_id, &approval_id, &decision)
        .await
        .unwrap();
    client.resume(&root).await.unwrap();
    let chunks = chunks_through(client, &root, 0, WAIT_LIMIT, false).await;
    crate::subagents::assert_completed(&chunks, r#"got {"answer":"Ada"} / sent 10 to alice"#);
    // The child's text is on the caller's stream once, though its A2A stream ends with the
    // whole artifact again.
    let said: String = forwarded(&chunks)
        .into_iter()
        .filter_map(|chunk| match &chunk.kind {
            ChunkKind::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(said, r#"{"answer":"Ada"} / sent 10 to alice"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_working_past_the_window_holds_nothing_and_is_polled_to_its_question() {
    // An agent that does not stream, and works a while before it asks.
    let (_agent, card) = sdk_agent_with(&["no-stream", "work=2"]).await;
    let mut agent = declared(&card).bearer(TOKEN);
    agent.follow_window = Duration::from_millis(300);
    let consumer = Harness::start(consumer_of(agent)).await;
    let root = start(&consumer, "remote_delegator").await.session_id;

    // The caller lets go of the working task: nothing of the consumer runs meanwhile.
    crate::remote_wait::holds_nothing(
        &consumer.client,
        (&consumer.temporal, &consumer.task_queue),
        &root,
    )
    .await;
    assert!(
        consumer
            .client
            .pending(&Default::default())
            .await
            .unwrap()
            .calls
            .is_empty()
    );
    // The sweep finds the task asking; its question is the root's call.
    let question = one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;
    assert_eq!(question.input["question"], "What is your name?");
    consumer
        .client
        .submit(
            &root,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"name": "Grace"})),
        )
        .await
        .unwrap();
    consumer.client.resume(&root).await.unwrap();
    let chunks = chunks_through(&consumer.client, &root, 0, WAIT_LIMIT, false).await;
    crate::subagents::assert_completed(&chunks, "got Hello, Grace!");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_of_the_caller_cancels_the_task() {
    let (_agent, card) = sdk_agent().await;
    let agent = declared(&card).bearer(TOKEN);
    let consumer = Harness::start(consumer_of(agent.clone())).await;
    let root = start(&consumer, "remote_delegator").await.session_id;
    one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;

    consumer.client.stop(&root, false).await.unwrap();
    let address = baton_core::store::SessionAddress::root(&root);
    let child = crate::remote_relay::child_of(&consumer.store, &root).await;
    let baton_core::store::A2aChild::Task(task_id) =
        consumer.store.a2a_child(&address, &child).await.unwrap()
    else {
        panic!("the call's task is recorded")
    };
    // The agent says the task is canceled.
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": task_id}});
    let endpoint = card.replace(AGENT_CARD_PATH, "/");
    let state = reqwest::Client::new()
        .post(&endpoint)
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap()["result"]["status"]["state"]
        .clone();
    assert_eq!(state, "canceled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_of_the_tasks_question_wakes_a_caller_that_holds_nothing() {
    let (_agent, card) = sdk_agent_with(&["no-stream", "push", "work=2"]).await;
    let mut agent = declared(&card).bearer(TOKEN);
    agent.follow_window = Duration::from_millis(300);
    let registry = consumer_of(agent);
    let consumer = Harness::server_only(registry.clone()).await;
    // No remote-wait sweep: only the agent's push can say the task stopped working.
    let settings = baton_worker::WorkerSettings {
        remote_waits: None,
        remote_callback_url: Some(consumer.remote_callback_url()),
        ..baton_tests::test_worker_settings(&consumer.task_queue)
    };
    let _worker = baton_tests::WorkerThread::spawn_with(settings, &consumer.prefix, registry);
    let root = start(&consumer, "remote_delegator").await.session_id;
    crate::remote_wait::holds_nothing(
        &consumer.client,
        (&consumer.temporal, &consumer.task_queue),
        &root,
    )
    .await;

    // A push without the call's token is refused, and starts nothing.
    let address = baton_core::store::SessionAddress::root(&root);
    let child = crate::remote_relay::child_of(&consumer.store, &root).await;
    let forged = json!({"kind": "task", "id": "t", "contextId": child, "status": {"state": "input-required"}});
    let push_url = format!("{}/{root}/a2a", consumer.remote_callback_url());
    let refused = reqwest::Client::new()
        .post(&push_url)
        .header("x-a2a-notification-token", "guessed")
        .json(&forged)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert!(
        consumer
            .store
            .relayed_groups(&address)
            .await
            .unwrap()
            .is_empty()
    );

    let question = one_pending(&consumer.client, &root, PersonCallKind::ClientTool).await;
    assert_eq!(question.input["question"], "What is your name?");
    consumer
        .client
        .submit(
            &root,
            &question.tool_call_id,
            &ToolOutcome::Result(json!({"name": "Lin"})),
        )
        .await
        .unwrap();
    consumer.client.resume(&root).await.unwrap();
    let chunks = chunks_through(&consumer.client, &root, 0, WAIT_LIMIT, false).await;
    crate::subagents::assert_completed(&chunks, "got Hello, Lin!");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_refuses_the_push_url_is_called_without_it() {
    // A producer whose callback hosts list nothing: it refuses every push URL (as a JSON-RPC
    // error, beginning no task).
    let options = baton_worker::ServerOptions {
        callback_hosts: baton_worker::ops::CallbackHosts::default(),
        ..baton_tests::open_options()
    };
    let producer = Harness::start_with(baton_tests::agents::registry(), options).await;
    let card = format!(
        "http://{}/agents/chatter{AGENT_CARD_PATH}",
        producer.address
    );
    let agent = declared(&card).bearer(baton_tests::TEST_SERVICE_KEY);
    // The consumer has a callback URL, so its message asks for pushes.
    let consumer = Harness::start(consumer_of(agent)).await;
    let root = start(&consumer, "remote_delegator").await.session_id;
    let chunks = consumer.chunks_until_end(&root, WAIT_LIMIT).await;
    crate::subagents::assert_completed(&chunks, "got first: hello");
    // One context on the producer: the refused message began nothing.
    let page = producer.client.sessions(&Default::default()).await.unwrap();
    assert_eq!(page.sessions.len(), 1, "{:?}", page.sessions);
}

//! The chat route with the real client: Node drivers (`tests/js/chat-driver.mjs`) run the
//! `AbstractChat` of `ai` 6.0.0 and of the newest 6.x (a state that clones messages as React's
//! does) against this server, and each scenario is checked on both, counting the POSTs: no
//! request may be sent twice. `answers` and `contract` check the route's answers with plain HTTP requests,
//! `auth` the route under built-in auth, `tokens` user tokens, revocation and origins, `tree` a
//! session tree's calls, `remote` a remote child's relayed calls, `messages` message ids, metadata, files, reasoning and a tool's data parts, `browser` the demo page in
//! Chromium, `react` a React app on `@ai-sdk/react` in Chromium.

mod answers;
mod auth;
pub(crate) mod browser;
mod contract;
mod mcp;
mod messages;
mod react;
mod remote;
mod revoked_streams;
mod tokens;
mod tree;

use baton_core::{
    Agent, AgentRegistry, ScriptedModel,
    tool::{ClientTool, ToolContext, tool, tool_with_context},
};
use baton_tests::{Harness, agents, tree_agents};
use serde_json::{Value, json};
use std::{
    path::PathBuf,
    sync::atomic::{AtomicBool, Ordering},
};

/// The `ai` releases every scenario runs on: the npm aliases `tests/js/package.json` pins.
const AI_RELEASES: [&str; 2] = ["ai-6.0.0", "ai-latest"];

/// `mixed`: step 1 calls the client tool `ask_user` and the approval-gated `transfer` at once;
/// step 2 reports both.
fn mixed() -> Agent {
    let model = ScriptedModel::default()
        .call_all(&[
            ("ask_user", json!({"question": "Proceed?"})),
            ("transfer", json!({"to": "alice", "amount": 10})),
        ])
        .answer("User: {{result:ask_user}}; transfer: {{result:transfer}}");
    let transfer =
        tool(
            "transfer",
            "Sends money.",
            |t: agents::Transfer| async move {
                Ok::<_, String>(format!("sent {} to {}", t.amount, t.to))
            },
        )
        .requires_approval();
    Agent::builder("mixed")
        .model(model)
        .tool(transfer)
        .client_tool(ClientTool::typed::<agents::Question, agents::Reply>(
            "ask_user",
            "Asks the user a question.",
        ))
        .build()
        .unwrap()
}

/// Set when the stop test is done with the `napper` agent's naps: they return.
static NAPS_RELEASED: AtomicBool = AtomicBool::new(false);
/// The same for the browser test's `napper_page`.
pub(crate) static PAGE_NAPS_RELEASED: AtomicBool = AtomicBool::new(false);
/// The same for the React app's `napper_react`.
pub(crate) static REACT_NAPS_RELEASED: AtomicBool = AtomicBool::new(false);

/// `napper` (and `napper_page`): step 1 calls `nap`, a server tool that runs until its test
/// releases it (at most a minute), so a turn is still running when the client stops it; step 2
/// answers.
fn napper(name: &str, released: &'static AtomicBool) -> Agent {
    let nap = tool(
        "nap",
        "Naps until released.",
        move |_: agents::NoInput| async move {
            for _ in 0..600 {
                if released.load(Ordering::Relaxed) {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Ok::<_, String>("rested")
        },
    );
    let model = ScriptedModel::default()
        .call("nap", json!({}))
        .answer("after the nap: {{input}}");
    Agent::builder(name).model(model).tool(nap).build().unwrap()
}

/// `looker`: answers each turn with the media types of the user message's files and its text.
fn looker() -> Agent {
    let model = ScriptedModel::default()
        .answer("saw [{{files}}] {{input}}")
        .answer("then [{{files}}] {{input}}");
    Agent::builder("looker").model(model).build().unwrap()
}

/// `thinker`: reasons, then answers.
fn thinker() -> Agent {
    let model = ScriptedModel::default()
        .answer("It is 42.")
        .reasoning("Six times seven is forty-two.");
    Agent::builder("thinker").model(model).build().unwrap()
}

/// `forecaster` (and `forecaster_gated`, whose `forecast` waits for an approval first): its
/// server tool `forecast` emits a transient `progress` and a kept `weather` data part, and
/// reports the refusal of a reserved name.
fn forecaster(name: &str, gated: bool) -> Agent {
    let forecast = tool_with_context(
        "forecast",
        "Forecasts.",
        |context: ToolContext, _: Value| async move {
            let emitted = context
                .emit_transient_data("progress", json!({"percent": 50}))
                .and_then(|()| {
                    context.emit_data("weather", json!({"city": "Oslo", "sky": "snow"}))
                });
            let refused = context.emit_data("render", json!({})).err();
            emitted.map_err(|e| e.to_string())?;
            Ok::<_, String>(json!({"sky": "snow", "refused": refused.map(|e| e.to_string())}))
        },
    );
    let forecast = match gated {
        true => forecast.requires_approval(),
        false => forecast,
    };
    let model = ScriptedModel::default()
        .call("forecast", json!({}))
        .reasoning("Looking up Oslo.")
        .answer("Snow.")
        .reasoning("Oslo in winter.");
    Agent::builder(name)
        .model(model)
        .tool(forecast)
        .build()
        .unwrap()
}

/// The agents the chat tests talk to.
pub(crate) fn chat_registry() -> AgentRegistry {
    AgentRegistry::new(
        [
            agents::chatter(),
            agents::asker_only(),
            agents::asker_twice(),
            agents::guarded(),
            mixed(),
            napper("napper", &NAPS_RELEASED),
            napper("napper_page", &PAGE_NAPS_RELEASED),
            napper("napper_react", &REACT_NAPS_RELEASED),
            looker(),
            thinker(),
            forecaster("forecaster", false),
            forecaster("forecaster_gated", true),
            baton_worker::demo::demo_hitl_agent(),
            tree_agents::top(),
            tree_agents::middle(),
            tree_agents::child_asker(),
            tree_agents::child_asking_twice(),
            tree_agents::parent_of_twice_asker(),
            tree_agents::child_approver(),
            tree_agents::fan_out(),
        ]
        .into_iter()
        .chain(baton_worker::demo::demo_tree_agents()),
    )
    .unwrap()
}

/// `tests/js`, where `npm ci` installed the pinned `ai` releases.
pub(crate) fn js_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("js");
    assert!(
        dir.join("node_modules/ai-6.0.0").is_dir() && dir.join("node_modules/ai-latest").is_dir(),
        "the chat tests need the pinned ai packages: run `npm ci` in {} (scripts/test.sh does)",
        dir.display()
    );
    dir
}

/// Runs one scenario of the driver on `release` against the harness and returns its summary,
/// after the checks every scenario shares: no request repeated, no runaway.
async fn drive(harness: &Harness, release: &str, scenario: &str) -> Value {
    let output = tokio::process::Command::new("node")
        .current_dir(js_dir())
        .arg("chat-driver.mjs")
        .arg(release)
        .arg(format!("http://{}", harness.address))
        .arg(scenario)
        .output()
        .await
        .expect("node runs (scripts/test.sh installs it)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{scenario} on {release} failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("{scenario} on {release}: no summary ({e}): {stdout}"));
    assert_eq!(
        summary["repeated"], false,
        "a request was repeated: {summary}"
    );
    summary
}

/// Each scenario on each release, with its own assertions.
async fn on_every_release(scenario: &str, check: impl Fn(&Value)) {
    let harness = Harness::start(chat_registry()).await;
    for release in AI_RELEASES {
        let summary = drive(&harness, release, scenario).await;
        check(&summary);
    }
}

fn ready_with(summary: &Value, posts: u64, text: &str) {
    assert_eq!(summary["status"], "ready", "{summary}");
    assert_eq!(summary["ownPosts"], posts, "{summary}");
    assert_eq!(summary["lastText"], text, "{summary}");
}

fn has_part(summary: &Value, part: &str) -> bool {
    summary["lastParts"]
        .as_array()
        .is_some_and(|parts| parts.iter().any(|p| p == part))
}

/// A `mixed` chat seeded from the snapshot (its client call in `client_state`, its approval
/// awaited) that then sent `posts` requests and reached the final answer.
fn reloaded_then_answered(s: &Value, client_state: &str, posts: u64) {
    let reloaded = &s["reloaded"];
    assert!(
        has_part(reloaded, &format!("tool-ask_user:{client_state}")),
        "{s}"
    );
    assert!(
        has_part(reloaded, "tool-transfer:approval-requested"),
        "{s}"
    );
    ready_with(
        s,
        posts,
        r#"User: {"answer":"yes"}; transfer: sent 10 to alice"#,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_text_streams_in_one_request() {
    on_every_release("text", |s| ready_with(s, 1, "first: hello")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_tool_answered_with_add_tool_output_auto_sends_once() {
    on_every_release("client_tool", |s| {
        assert!(
            has_part(&s["suspended"], "tool-ask_user:input-available"),
            "{s}"
        );
        assert_eq!(s["suspended"]["status"], "ready", "{s}");
        ready_with(s, 2, r#"Hello {"answer":"Ada"}"#);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_and_a_denial_each_send_once() {
    on_every_release("approve", |s| {
        assert!(
            has_part(&s["suspended"], "tool-transfer:approval-requested"),
            "{s}"
        );
        ready_with(s, 2, "Transfer: sent 10 to alice");
        assert!(has_part(s, "tool-transfer:output-available"), "{s}");
    })
    .await;
    on_every_release("deny", |s| {
        ready_with(s, 2, "Transfer: error tool_denied");
        assert!(has_part(s, "tool-transfer:output-denied"), "{s}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_two_sends_once_both_are_answered() {
    on_every_release("batch", |s| {
        assert_eq!(s["postsAfterFirstAnswer"], 1, "{s}");
        ready_with(s, 2, r#"Both answered; the last said {"answer":"two"}"#);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_call_beside_an_approval_sends_once_both_are_answered() {
    on_every_release("mixed", |s| {
        assert_eq!(s["postsAfterClientAnswer"], 1, "{s}");
        ready_with(
            s,
            2,
            r#"User: {"answer":"yes"}; transfer: sent 10 to alice"#,
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_sent_answer_closes_a_step_and_is_sent_once() {
    on_every_release("resend", |s| {
        ready_with(&s["first"], 2, r#"Hello {"answer":"Ada"}"#);
        assert_eq!(s["ownPosts"], 1, "{s}");
        assert_eq!(s["status"], "ready", "{s}");
        let parts = s["lastParts"].as_array().unwrap();
        let tail: Vec<&str> = parts[parts.len() - 2..]
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        assert_eq!(tail, ["step-start", "data-answers"], "{s}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_not_stored_beside_a_stored_one_is_409_and_the_snapshot_recovers() {
    on_every_release("case_c", |s| {
        let refused = &s["refused"];
        assert_eq!(refused["status"], "error", "{s}");
        // The message that started the chat, then the one auto-send, refused.
        assert_eq!(refused["ownPosts"], 2, "{s}");
        let body: Value = serde_json::from_str(refused["error"].as_str().unwrap()).unwrap();
        assert_eq!(body["code"], "state_not_resumable");
        assert_eq!(body["cause"], "answer_not_stored");
        assert_eq!(body["retryable"], false);
        assert_eq!(body["toolCallIds"], json!(["call_1_2"]));
        reloaded_then_answered(s, "output-available", 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_reloaded_from_the_snapshot_auto_sends_like_the_live_one() {
    on_every_release("reload", |s| {
        assert_eq!(s["postsAfterClientAnswer"], 0, "{s}");
        reloaded_then_answered(s, "input-available", 1);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reloaded_chat_sends_per_predicate_as_the_live_one() {
    // Either predicate: the client's answer alone sends nothing; approving sends both and the
    // run goes on. The approval's output streams into the answered step, before the new step
    // opens, so the predicates read a step with no tool part: nothing is sent again.
    on_every_release("reload_either", |s| {
        assert_eq!(s["postsAfterClientAnswer"], 0, "{s}");
        reloaded_then_answered(s, "input-available", 1);
    })
    .await;
    // The tool-calls predicate alone counts output parts only: nothing is ever sent.
    on_every_release("reload_tool_calls", |s| {
        assert_eq!(s["postsAfterClientAnswer"], 0, "{s}");
        assert_eq!(s["ownPosts"], 0, "{s}");
        assert_eq!(s["status"], "ready", "{s}");
        assert!(has_part(s, "tool-transfer:approval-responded"), "{s}");
    })
    .await;
}

/// `useChat`'s edit (`sendMessage` with a user message's `messageId`) replaces that message and
/// what followed: the server rewinds to the checkpoint before it and answers the edited text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_user_message_replaces_its_turn() {
    on_every_release("edit", |s| {
        ready_with(&s["before"], 2, "second: more");
        ready_with(s, 3, "second: again");
        assert_eq!(s["messageCount"], 4, "{s}");
        let texts = json!(["hello", "first: hello", "again", "second: again"]);
        assert_eq!(s["snapshotTexts"], texts, "{s}");
    })
    .await;
}

/// The chat's first message is edited too: no checkpoint precedes it, so the rewind goes to the
/// session's first one and keeps none of its messages; the log is the edited turn alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_first_message_replaces_the_whole_chat() {
    on_every_release("edit_first", |s| {
        ready_with(&s["before"], 2, "second: more");
        ready_with(s, 3, "first: hi");
        assert_eq!(s["messageCount"], 2, "{s}");
        assert_eq!(s["snapshotTexts"], json!(["hi", "first: hi"]), "{s}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regenerate_rewinds_and_a_next_turn_abandons_open_calls() {
    on_every_release("regenerate", |s| {
        ready_with(&s["before"], 1, "first: hello");
        ready_with(s, 2, "first: hello");
        assert_eq!(s["messageCount"], 2, "{s}");
    })
    .await;
    on_every_release("next_turn", |s| {
        ready_with(s, 2, "Hello error client_tool_abandoned");
        assert_eq!(s["messageCount"], 4, "{s}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_reaches_the_server_and_the_session_is_interrupted_not_running() {
    let harness = Harness::start(chat_registry()).await;
    for release in AI_RELEASES {
        let s = drive(&harness, release, "stop").await;
        assert_eq!(s["runningBeforeStop"], "active", "{s}");
        assert_eq!(s["stopAnswer"]["status"], "interrupted", "{s}");
        assert_eq!(s["afterStop"]["status"], "interrupted", "{s}");
        assert_eq!(s["afterStop"]["streaming"], false, "{s}");
        // Stopped: the chat is ready for the next message, which starts a new turn.
        assert_eq!(s["stopped"]["status"], "ready", "{s}");
        assert_eq!(s["stopped"]["ownPosts"], 1, "{s}");
        assert_eq!(s["ownPosts"], 2, "{s}");
        assert_eq!(s["status"], "ready", "{s}");
    }
    for release in AI_RELEASES {
        let s = drive(&harness, release, "stop_on_abort").await;
        assert_eq!(s["afterStop"]["status"], "interrupted", "{s}");
        assert_eq!(s["ownPosts"], 1, "{s}");
    }
    NAPS_RELEASED.store(true, Ordering::Relaxed);
}

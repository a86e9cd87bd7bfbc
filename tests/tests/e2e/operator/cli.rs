//! The operator's commands of the real `baton` binary against a real server: `sessions` and
//! `pending` (one line per row and what answering it takes, and `--json` the page exactly as
//! the API answers it), `answer`, `approve` and `deny` by a call id from the inbox (each answering
//! and going on to the run's next pause or end), `watch` across pauses, and `fork`.

use super::start_for;
use baton_client::Client as _;
use baton_client::wire::submit::{SubmitAnswer, SubmitStatus};
use baton_core::{
    fork::ForkResponse,
    search::{PendingPage, SessionSearch, SessionsPage},
};
use baton_tests::{Harness, agents};
use std::path::PathBuf;

/// The `baton` binary of today's code, beside the test executable.
fn baton_binary() -> PathBuf {
    baton_tests::procs::workspace_binary("baton-client", "baton").expect("the baton binary builds")
}

/// Runs `baton --server <harness> <args>` (no credentials or gRPC address from the
/// environment).
async fn run(harness: &Harness, args: &[&str]) -> std::process::Output {
    tokio::process::Command::new(baton_binary())
        .arg("--server")
        .arg(format!("http://{}", harness.address))
        .args(args)
        .env_remove("BATON_TOKEN")
        .env_remove("BATON_GRPC")
        .output()
        .await
        .expect("the baton binary runs")
}

/// `baton <args>`, which must succeed: its standard output.
async fn baton(harness: &Harness, args: &[&str]) -> String {
    let output = run(harness, args).await;
    assert!(
        output.status.success(),
        "baton {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("baton prints UTF-8")
}

/// `baton <args>`, which must fail: its standard error.
async fn baton_failing(harness: &Harness, args: &[&str]) -> String {
    let output = run(harness, args).await;
    assert!(!output.status.success(), "baton {args:?} succeeded");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The inbox's calls without their ages (which move between two reads).
fn ageless(mut page: PendingPage) -> PendingPage {
    page.calls.iter_mut().for_each(|call| call.age_ms = None);
    page
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_lists_sessions_and_the_inbox_and_answers_by_call_id() {
    let harness = Harness::start(agents::registry()).await;
    let asker = harness
        .client
        .start_request(start_for("asker_only", "u-cli", &["vip"], "pro"))
        .await
        .unwrap()
        .session_id;
    super::root_suspended(&harness, &asker).await;

    // `sessions`: one line per session, and `--json` the API's page.
    let text = baton(&harness, &["sessions"]).await;
    let line = text
        .lines()
        .find(|line| line.starts_with(&asker))
        .unwrap_or_else(|| panic!("no line for {asker}: {text}"));
    for part in [
        "suspended_client_tool",
        "asker_only",
        "pending 1",
        "user u-cli",
        "tags vip",
    ] {
        assert!(line.contains(part), "{part:?} not in {line:?}");
    }
    let json: SessionsPage = serde_json::from_str(&baton(&harness, &["sessions", "--json"]).await)
        .expect("`sessions --json` prints the page as JSON");
    let api = harness
        .client
        .sessions(&SessionSearch::default())
        .await
        .unwrap();
    assert_eq!(json, api);
    let filtered = baton(&harness, &["sessions", "--user", "u-other"]).await;
    assert!(!filtered.contains(&asker), "{filtered}");

    // `pending`: the call, its kind and tool, and its session.
    let inbox = baton(&harness, &["pending"]).await;
    let line = inbox
        .lines()
        .find(|line| line.starts_with("call_1_1"))
        .unwrap_or_else(|| panic!("no call_1_1 in the inbox: {inbox}"));
    for part in [
        "client tool",
        "ask_user(",
        &format!("session {asker}"),
        "agent asker_only",
    ] {
        assert!(line.contains(part), "{part:?} not in {line:?}");
    }
    // Under each row, what answering it takes.
    assert!(
        inbox.contains("answer: baton answer call_1_1 RESULT"),
        "{inbox}"
    );
    let json: PendingPage = serde_json::from_str(&baton(&harness, &["pending", "--json"]).await)
        .expect("`pending --json` prints the page as JSON");
    let api = harness
        .client
        .pending(&SessionSearch::default())
        .await
        .unwrap();
    assert_eq!(ageless(json), ageless(api));

    // `answer` by the call id alone: the inbox names the session, and the one command answers,
    // resumes and follows the run to its end.
    let answered = baton(&harness, &["answer", "call_1_1", r#"{"answer":"yes"}"#]).await;
    assert!(answered.contains("answered; resumed as run"), "{answered}");
    let after = harness.client.status(&asker).await.unwrap();
    assert!(after.pending.is_empty(), "{after:?}");
    assert_eq!(
        after.status,
        baton_core::store::Status::Completed,
        "{answered}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_forks_and_refuses_a_call_id_waiting_in_two_sessions() {
    let harness = Harness::start(agents::registry()).await;
    let asker = harness.suspended_session("asker_only").await;
    // `fork` at the suspended checkpoint: a new session awaiting the same call, the original
    // untouched.
    let fork: ForkResponse = serde_json::from_str(&baton(&harness, &["fork", &asker, "1"]).await)
        .expect("`fork` prints the fork as JSON");
    assert_eq!(fork.forked_from, format!("{asker}:1"));
    assert_ne!(fork.session_id, asker);
    harness.index_settled().await;
    let before = harness.client.status(&asker).await.unwrap();
    let forked = harness.client.status(&fork.session_id).await.unwrap();
    assert_eq!(forked.pending.len(), 1, "{forked:?}");

    // The call id waits in two sessions: `answer` by the id alone is refused, naming both, and
    // answers neither.
    let refused = baton_failing(&harness, &["answer", "call_1_1", "yes"]).await;
    for part in [
        "waits in 2 sessions",
        asker.as_str(),
        fork.session_id.as_str(),
    ] {
        assert!(refused.contains(part), "{part:?} not in {refused:?}");
    }
    let version =
        |state: &baton_core::session::SessionState| (state.last_sequence, state.updated_at);
    let unchanged = harness.client.status(&asker).await.unwrap();
    assert_eq!(version(&unchanged), version(&before));
    let unchanged = harness.client.status(&fork.session_id).await.unwrap();
    assert_eq!(version(&unchanged), version(&forked));
    // Named by its session, the call is answered there alone.
    baton(
        &harness,
        &[
            "submit",
            &fork.session_id,
            "call_1_1",
            "--result",
            r#"{"answer":"fork"}"#,
        ],
    )
    .await;
    assert!(
        harness
            .client
            .status(&fork.session_id)
            .await
            .unwrap()
            .pending
            .is_empty()
    );
    assert_eq!(
        harness.client.status(&asker).await.unwrap().pending.len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_approves_and_denies_by_call_id_from_the_inbox() {
    let harness = Harness::start(agents::registry()).await;
    let first = harness.suspended_session("guarded").await;
    harness.index_settled().await;
    let inbox = baton(&harness, &["pending"]).await;
    assert!(
        inbox
            .lines()
            .any(|line| line.starts_with("call_1_1") && line.contains("approval")),
        "{inbox}"
    );
    // With --no-follow the answer is only stored, and printed as the API answered it.
    let denied: SubmitAnswer = serde_json::from_str(
        &baton(
            &harness,
            &["deny", "call_1_1", "--reason", "not today", "--no-follow"],
        )
        .await,
    )
    .expect("`deny --no-follow` prints the answer as JSON");
    assert_eq!(denied.status, SubmitStatus::Accepted);
    harness.client.resume(&first).await.unwrap();
    let chunks = harness
        .chunks_until_end(&first, baton_tests::WAIT_LIMIT)
        .await;
    let denial = chunks.iter().any(|chunk| {
        matches!(&chunk.kind, baton_core::ChunkKind::ToolEnd { error: Some(error), .. }
            if format!("{error:?}").contains("not today"))
    });
    assert!(
        denial,
        "the model sees the denial with its reason: {chunks:?}"
    );

    let second = harness.suspended_session("guarded").await;
    harness.index_settled().await;
    let inbox = baton(&harness, &["pending"]).await;
    let approval_id = harness.client.status(&second).await.unwrap().pending[0]
        .approval_id
        .clone()
        .expect("an approval");
    assert!(
        inbox.contains("decide: baton approve call_1_1")
            && inbox.contains(&format!("(approval id {approval_id})")),
        "{inbox}"
    );
    // `approve` answers, resumes and follows the run to its end (with --json: the answer, then
    // the chunks, one JSON per line).
    let approved = baton(&harness, &["approve", "call_1_1", "--json"]).await;
    let mut lines = approved.lines();
    let answer: SubmitAnswer = serde_json::from_str(lines.next().unwrap_or_default())
        .expect("the first line is the answer");
    assert_eq!(answer.status, SubmitStatus::Accepted);
    let last: baton_core::StreamChunk =
        serde_json::from_str(lines.last().unwrap_or_default()).expect("chunks follow");
    assert_eq!(last.kind.name(), "end", "{approved}");
    assert_eq!(
        harness.client.status(&second).await.unwrap().status,
        baton_core::store::Status::Completed
    );
    assert!(baton(&harness, &["pending"]).await.trim().is_empty());
}

/// `watch` from 0 follows a session across its pause for a person to its run's end: it names
/// the calls it waits on and goes on once someone else answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_watches_a_session_across_its_pause_to_its_end() {
    let harness = Harness::start(agents::registry()).await;
    let asker = harness.suspended_session("asker_only").await;
    let watching = tokio::process::Command::new(baton_binary())
        .arg("--server")
        .arg(format!("http://{}", harness.address))
        .args(["watch", &asker])
        .env_remove("BATON_TOKEN")
        .env_remove("BATON_GRPC")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the baton binary runs");
    // The watch has read past the suspension before the answer comes (it waits, not ends).
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    harness
        .client
        .submit(
            &asker,
            "call_1_1",
            &baton_core::message::ToolOutcome::Result(serde_json::json!({"answer": "Ann"})),
        )
        .await
        .unwrap();
    harness.client.resume(&asker).await.unwrap();
    let output = tokio::time::timeout(baton_tests::WAIT_LIMIT, watching.wait_with_output())
        .await
        .expect("the watch ends with the run")
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{printed}");
    assert!(
        printed.contains("waiting on a person for call_1_1"),
        "{printed}"
    );
    let waiting_at = printed.find("waiting on a person").unwrap_or_default();
    assert!(printed[waiting_at..].contains("✓ completed"), "{printed}");
}

/// A refused credential says which flag gives one: none given names `--token`, a wrong one says
/// it was refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_names_the_token_flag_when_the_server_wants_a_credential() {
    const KEY: &str = "an operator key of at least thirty-two bytes";
    let harness =
        Harness::server_only_with(agents::registry(), baton_tests::keyed_options(KEY)).await;
    let without = baton_failing(&harness, &["sessions"]).await;
    assert!(without.contains("unauthorized"), "{without}");
    assert!(without.contains("pass --token"), "{without}");
    let wrong = baton_failing(&harness, &["--token", "not the key", "sessions"]).await;
    assert!(wrong.contains("refused the --token"), "{wrong}");
    let listed = baton(&harness, &["--token", KEY, "sessions"]).await;
    assert!(!listed.contains("--token"), "{listed}");
}

/// `run --answer` asks a client call's result field by field from its output schema: `ask_user`
/// answers `{answer: string}`, and the text typed at the `answer` prompt is that field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_answer_prompts_each_field_of_the_output_schema() {
    let harness = Harness::start(agents::registry()).await;
    let output = baton_tests::procs::baton_run_answering(
        &harness.address.to_string(),
        "asker_only",
        b"Ann\n",
    )
    .await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("question: "), "{stderr}");
    assert!(stderr.contains("? ask_user · answer (text) > "), "{stderr}");
    assert!(stdout.contains(r#"{"answer":"Ann"}"#), "{stdout}");
}

//! The operator console in a real browser: `tests/browser/console_page.py` drives Debian's
//! Chromium headless (as the chat page's test does) against a server with an operator key: sign
//! in, find the waiting call in the inbox, answer it, watch the session finish. The screenshot is
//! kept under the target directory (`chat-artifacts/console.png`).

use crate::chat::browser::{artifacts_dir, playwright_python};
use baton_tests::{Harness, agents};
use baton_worker::{
    ServerOptions,
    auth::{Auth, BuiltinAuth},
};
use serde_json::Value;
use std::{path::PathBuf, sync::Arc, time::Duration};

const KEY: &str = "console-operator-key";

/// Runs `tests/browser/<script> <base URL> <key> <session> <screenshot>` in playwright's
/// Python: the JSON summary it prints.
pub(super) async fn browse(
    harness: &Harness,
    script: &str,
    key: &str,
    session: &str,
    screenshot: &std::path::Path,
) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("browser")
        .join(script);
    let output = tokio::process::Command::new(playwright_python())
        .arg(&script)
        .arg(format!("http://{}", harness.address))
        .arg(key)
        .arg(session)
        .arg(screenshot)
        .output()
        .await
        .expect("python runs (scripts/services.sh installs playwright and chromium)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

/// A server whose one operator key (named `console`) is `key`, and a client holding it.
pub(super) async fn console_harness(
    key: &str,
    temporal_ui_url: Option<String>,
) -> (Harness, baton_client::HttpClient) {
    let options = ServerOptions {
        auth: Auth::Builtin(Arc::new(BuiltinAuth::with_named_keys(
            vec![("console".into(), key.into())],
            b"test secret",
            Duration::from_secs(600),
        ))),
        temporal_ui_url,
        ..Default::default()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let operator =
        baton_client::HttpClient::with_bearer(format!("http://{}", harness.address), key).unwrap();
    (harness, operator)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_answers_a_waiting_call_from_the_inbox_and_sees_the_session_finish() {
    let (harness, operator) = console_harness(
        KEY,
        Some("http://temporal.example/namespaces/default".into()),
    )
    .await;
    let session = {
        use baton_client::Client as _;
        use futures::StreamExt as _;
        let started = operator.start("asker_only", "go").await.unwrap();
        let mut chunks = operator.follow(&started.session_id, 0);
        while let Some(chunk) = chunks.next().await {
            if chunk.unwrap().kind.name() == "suspended" {
                break;
            }
        }
        started.session_id
    };
    harness.index_settled().await;
    let screenshot = artifacts_dir().join("console.png");
    let summary = browse(&harness, "console_page.py", KEY, &session, &screenshot).await;
    assert_eq!(summary["keyInUrl"], false, "{summary}");
    assert_eq!(summary["keyStored"], true, "{summary}");
    let link = summary["temporalLink"].as_str().unwrap_or_default();
    assert!(
        link.starts_with(
            "http://temporal.example/namespaces/default/workflows/agent__asker_only__"
        ),
        "{summary}"
    );
    assert!(std::fs::metadata(&screenshot).is_ok_and(|m| m.len() > 0));
    let state = {
        use baton_client::Client as _;
        operator.status(&session).await.unwrap()
    };
    assert_eq!(state.status, baton_core::store::Status::Completed);
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_answers_a_waiting_call_from_the_inbox_and_sees_the_session_finish() {
    let options = ServerOptions {
        auth: Auth::Builtin(Arc::new(BuiltinAuth::with_named_keys(
            vec![("console".into(), KEY.into())],
            b"test secret",
            Duration::from_secs(600),
        ))),
        temporal_ui_url: Some("http://temporal.example/namespaces/default".into()),
        ..Default::default()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let operator =
        baton_client::HttpClient::with_bearer(format!("http://{}", harness.address), KEY).unwrap();
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
    let python = playwright_python();
    let screenshot = artifacts_dir().join("console.png");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("browser/console_page.py");
    let output = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(format!("http://{}", harness.address))
        .arg(KEY)
        .arg(&session)
        .arg(&screenshot)
        .output()
        .await
        .expect("python runs (scripts/services.sh installs playwright and chromium)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the console test failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.trim()).unwrap();
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

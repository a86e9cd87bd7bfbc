//! The operator console in a real browser: `tests/browser/console_page.py` drives Debian's
//! Chromium headless (as the chat page's test does) against a server with an operator key: sign
//! in, page through the sessions, find the waiting call in the inbox, answer it through the form
//! its schema makes, watch the session finish. The screenshot is kept under the target
//! directory (`chat-artifacts/console.png`).

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
    // A second session, so that the list has a second page at one row a page.
    {
        use baton_client::Client as _;
        use futures::StreamExt as _;
        let other = operator.start("chatter", "hello").await.unwrap();
        let mut chunks = operator.follow(&other.session_id, 0);
        while let Some(chunk) = chunks.next().await {
            if chunk.unwrap().kind.name() == "end" {
                break;
            }
        }
    }
    harness.index_settled().await;
    let screenshot = artifacts_dir().join("console.png");
    let summary = browse(&harness, "console_page.py", KEY, &session, &screenshot).await;
    assert_eq!(summary["keyInUrl"], false, "{summary}");
    assert_eq!(summary["keyStored"], true, "{summary}");
    assert_eq!(summary["cspViolations"], serde_json::json!([]), "{summary}");
    let link = summary["temporalLink"].as_str().unwrap_or_default();
    assert!(
        link.starts_with(
            "http://temporal.example/namespaces/default/workflows/agent__asker_only__"
        ),
        "{summary}"
    );
    assert!(std::fs::metadata(&screenshot).is_ok_and(|m| m.len() > 0));
    assert_eq!(summary["paged"], true, "{summary}");
    assert_eq!(
        summary["rawBox"], 0,
        "the answer is a form, not a JSON box: {summary}"
    );
    assert!(
        summary["age"]
            .as_str()
            .is_some_and(|age| age.ends_with(" s") || age.ends_with(" min")),
        "{summary}"
    );
    // The deadline in the browser's own zone, named (headless Chromium runs in UTC here).
    let deadline = summary["deadline"].as_str().unwrap_or_default();
    assert!(
        deadline.contains("UTC") || deadline.contains("GMT"),
        "{summary}"
    );
    // The start and after each of the session's steps.
    assert!(
        summary["checkpoints"].as_u64().is_some_and(|n| n >= 2),
        "{summary}"
    );
    // Deleted from its page at the end: gone for the API too.
    assert_eq!(summary["deletedStatus"], 404, "{summary}");
    let gone = {
        use baton_client::Client as _;
        operator.status(&session).await.unwrap_err()
    };
    assert_eq!(
        baton_tests::api_error(gone).code,
        baton_core::ErrorCode::SessionNotFound
    );
}

/// The attributes of `html`'s tags that run or style inline: `style=` and `on*=`.
fn inline_attributes(html: &str) -> Vec<String> {
    html.split('<')
        .skip(1)
        .filter_map(|tag| tag.split_once('>').map(|(inside, _)| inside))
        .filter(|inside| !inside.starts_with('!'))
        .flat_map(|inside| inside.split_whitespace().skip(1))
        .filter(|attribute| {
            let name = attribute.split('=').next().unwrap_or_default();
            attribute.contains('=') && (name == "style" || name.starts_with("on"))
        })
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_is_served_under_the_pages_csp_with_no_inline_code_and_never_framed() {
    let harness = Harness::server_only_with(agents::registry(), baton_tests::open_options()).await;
    for path in ["/console", "/chat"] {
        let (status, headers, html) = harness.get(path).await;
        assert_eq!(status, 200, "{path}");
        let csp = headers["content-security-policy"].to_str().unwrap();
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "connect-src 'self'",
            "frame-ancestors 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert!(!csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["referrer-policy"], "no-referrer", "{path}");
        // No inline script or style: every script is a file, no style element or attribute.
        assert!(!html.contains("<style"), "{path}");
        for script in html.split("<script").skip(1) {
            let tag = script.split_once('>').map_or(script, |(tag, _)| tag);
            assert!(tag.contains("src="), "{path}: an inline script");
        }
        assert_eq!(inline_attributes(&html), Vec::<String>::new(), "{path}");
    }
    for (path, kind) in [
        ("/console-assets/console.js", "text/javascript"),
        ("/console-assets/console.css", "text/css"),
    ] {
        let (status, headers, body) = harness.get(path).await;
        assert_eq!(status, 200, "{path}");
        let content_type = headers["content-type"].to_str().unwrap();
        assert!(content_type.starts_with(kind), "{path}: {content_type}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert!(!body.is_empty(), "{path}");
    }
}

//! A real app: `tests/web` is a minimal React app on `@ai-sdk/react`'s `useChat` with
//! `DefaultChatTransport` and no adapter code, bundled here by the esbuild its lock file pins
//! (`npm ci` in `scripts/services.sh` installs it), served from an origin of its own by
//! `tests/browser/react_app.py` (which, as the app's backend, mints user tokens) and run in
//! Chromium against this server, which allows exactly that origin. Screenshots are kept under
//! the target directory (`chat-artifacts/react-*.png`).

use super::{REACT_NAPS_RELEASED, browser, chat_registry};
use baton_tests::{Harness, keyed_options};
use baton_worker::{AllowedOrigins, ServerOptions};
use serde_json::json;
use std::path::PathBuf;

const KEY: &str = "the-apps-operator-key";

/// `tests/web`, where `npm ci` installed React, `@ai-sdk/react` and esbuild.
fn web_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("web");
    assert!(
        dir.join("node_modules/.bin/esbuild").is_file(),
        "the React app test needs its packages: run `npm ci` in {} (scripts/services.sh does)",
        dir.display()
    );
    dir
}

/// The app's bundle, built into the artifacts directory.
async fn bundle() -> PathBuf {
    let out = browser::artifacts_dir().join("react-app/app.js");
    let built = tokio::process::Command::new("node_modules/.bin/esbuild")
        .current_dir(web_dir())
        .args([
            "src/app.jsx",
            "--bundle",
            "--format=esm",
            "--target=es2022",
            "--jsx=automatic",
            "--define:process.env.NODE_ENV=\"production\"",
            "--log-level=warning",
        ])
        .arg(format!("--outfile={}", out.display()))
        .output()
        .await
        .expect("esbuild runs");
    assert!(
        built.status.success(),
        "esbuild: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_react_app_on_use_chat_talks_to_batond_with_one_post_per_answer() {
    let bundle = bundle().await;
    // The app's origin: a free port, which the server allows (and no other).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .unwrap()
        .port();
    let origin = format!("http://127.0.0.1:{port}");
    let options = ServerOptions {
        allowed_origins: AllowedOrigins::parse(&[origin]).unwrap(),
        ..keyed_options(KEY)
    };
    let harness = Harness::start_with(chat_registry(), options).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("browser/react_app.py");
    let output = tokio::process::Command::new(browser::playwright_python())
        .arg(&script)
        .arg(format!("http://{}", harness.address))
        .arg(KEY)
        .arg(port.to_string())
        .arg(&bundle)
        .arg(browser::artifacts_dir())
        .output()
        .await
        .expect("python runs");
    REACT_NAPS_RELEASED.store(true, std::sync::atomic::Ordering::Relaxed);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the React app failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let s: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    for scenario in [
        "text",
        "client_tool",
        "approval",
        "reload",
        "stop",
        "file",
        "reload_features",
    ] {
        assert_eq!(s[scenario]["repeated"], false, "{scenario}: {s}");
    }
    assert_eq!(s["text"]["posts"], 1, "{s}");
    assert_eq!(s["text"]["lastText"], "first: hello", "{s}");
    // The message, then one POST for the answer (addToolOutput) or the approval.
    assert_eq!(s["client_tool"]["posts"], 2, "{s}");
    assert_eq!(s["approval"]["posts"], 2, "{s}");
    assert_eq!(
        s["approval"]["lastText"], "Transfer: sent 10 to alice",
        "{s}"
    );
    // Across a reload: the message before it, the answer after it.
    assert_eq!(s["reload"]["posts"], 2, "{s}");
    assert_eq!(s["reload"]["lastText"], r#"Hello {"answer":"Ada"}"#, "{s}");
    assert_eq!(s["stop"]["posts"], 1, "{s}");
    assert_eq!(s["stop"]["serverStatus"], "interrupted", "{s}");
    // A file-only message: one POST, the model saw the image, the page shows the user's file.
    assert_eq!(s["file"]["posts"], 1, "{s}");
    assert!(
        s["file"]["lastText"]
            .as_str()
            .is_some_and(|text| text.starts_with("saw [image/png]")),
        "{s}"
    );
    assert_eq!(s["file"]["files"], json!(["image/png"]), "{s}");
    // A reload shows what the stream showed: the reasoning, the data part of the call run once
    // approved, the server metadata; mid-way and after the end.
    let features = &s["reload_features"];
    assert_eq!(features["posts"], 2, "{s}");
    for stage in ["midway", "end"] {
        assert_eq!(features[stage][0], features[stage][1], "{stage}: {s}");
    }
    assert_eq!(
        features["end"][1],
        json!({
            "reasoning": ["Looking up Oslo.", "Oslo in winter."],
            "data": [r#"data-weather {"city":"Oslo","sky":"snow"}"#],
            "meta": ["scripted usage"],
        }),
        "{s}"
    );
    assert_eq!(
        features["midway"][1]["reasoning"],
        json!(["Looking up Oslo."]),
        "{s}"
    );
}

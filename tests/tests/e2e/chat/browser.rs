//! The demo chat page in a real browser: `tests/browser/chat_page.py` drives Debian's Chromium
//! headless (playwright for Python, pinned to the release whose Chromium major is Debian's, with
//! the system binary; no browser is downloaded) against this server. The page's screenshot is
//! kept under the target directory (`chat-artifacts/chat-page.png`).

use super::chat_registry;
use baton_tests::Harness;
use serde_json::Value;
use std::path::PathBuf;

/// Where the screenshot goes: the build's target directory.
fn artifacts_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    let dir = target.join("chat-artifacts");
    std::fs::create_dir_all(&dir).expect("the target directory is writable");
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_page_answers_a_form_and_an_approval_across_a_reload_in_chromium() {
    let harness = Harness::start(chat_registry()).await;
    // scripts/services.sh installs playwright into Baton's virtual environment and says where.
    let python = std::env::var("BATON_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let screenshot = artifacts_dir().join("chat-page.png");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("browser/chat_page.py");
    let output = tokio::process::Command::new(&python)
        .arg(&script)
        .arg(format!("http://{}", harness.address))
        .arg(&screenshot)
        .output()
        .await
        .expect("python runs (scripts/test.sh installs playwright and chromium)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the browser test failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(summary["repeated"], false, "{summary}");
    // Per turn: the message, the form's answer, the approval (the first sent from the reloaded
    // page); the held message went once the first turn was over.
    assert_eq!(summary["heldSent"], 4, "{summary}");
    assert_eq!(summary["posts"], 6, "{summary}");
    // The message, then the error the page settled the unrenderable call with.
    assert_eq!(summary["otherPagePosts"], 2, "{summary}");
    assert!(std::fs::metadata(&screenshot).is_ok_and(|m| m.len() > 0));
}

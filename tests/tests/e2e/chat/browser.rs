//! The demo chat page in a real browser: `tests/browser/chat_page*.py` drive Debian's Chromium
//! headless (playwright for Python, pinned to the release whose Chromium major is Debian's, with
//! the system binary; no browser is downloaded) against this server (or, for the re-send cap, a
//! hostile one of the script's own). The screenshots of each stage are kept under the target
//! directory (`chat-artifacts/chat-page-*.png`).

use super::chat_registry;
use baton_tests::Harness;
use serde_json::Value;
use std::path::PathBuf;

/// Where the screenshot goes: the build's target directory.
pub(crate) fn artifacts_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    let dir = target.join("chat-artifacts");
    std::fs::create_dir_all(&dir).expect("the target directory is writable");
    dir
}

/// The Python that has playwright: `BATON_TEST_PYTHON` when set (scripts/services.sh exports it),
/// else the virtual environment `scripts/services.sh` makes (`BATON_VENV`, or `baton/venv` under
/// the user's cache directory), so `cargo test --workspace` run directly finds it too. Without
/// either, the test says which command installs it.
pub(crate) fn playwright_python() -> PathBuf {
    let var = |name| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(python) = var("BATON_TEST_PYTHON") {
        return PathBuf::from(python);
    }
    let venv = var("BATON_VENV").map(PathBuf::from).or_else(|| {
        var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|home| PathBuf::from(home).join(".cache")))
            .map(|cache| cache.join("baton/venv"))
    });
    let python = venv.map(|venv| venv.join("bin/python"));
    let has_playwright = python.as_ref().is_some_and(|python| {
        std::process::Command::new(python)
            .args(["-c", "import playwright"])
            .output()
            .is_ok_and(|output| output.status.success())
    });
    assert!(
        has_playwright,
        "the browser test needs playwright for Python in Baton's virtual environment ({}): run \
         `source scripts/services.sh` once from the repository root (it installs it, with \
         Redis, Temporal and Chromium), or set BATON_TEST_PYTHON to a Python that has it",
        python.map_or_else(
            || "no HOME to find it".to_owned(),
            |p| p.display().to_string()
        )
    );
    python.unwrap_or_default()
}

/// Runs `tests/browser/<script>` with `arguments` and returns its JSON summary.
async fn run_page_script(script: &str, arguments: &[&std::ffi::OsStr]) -> Value {
    let python = playwright_python();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("browser")
        .join(script);
    let output = tokio::process::Command::new(&python)
        .arg(&script)
        .args(arguments)
        .output()
        .await
        .expect("python runs (scripts/test.sh installs playwright and chromium)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{} failed: {}\n{stdout}",
        script.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_renders_markdown_safely_stops_a_run_lists_the_users_chats_and_folds_reasoning() {
    let harness = Harness::start(chat_registry()).await;
    let base = format!("http://{}", harness.address);
    let dir = artifacts_dir();
    let summary = run_page_script("chat_page_features.py", &[base.as_ref(), dir.as_os_str()]).await;
    super::PAGE_NAPS_RELEASED.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        summary["images"], 0,
        "raw HTML became an element: {summary}"
    );
    assert_eq!(summary["owned"], false, "{summary}");
    assert_eq!(summary["serverAfterStop"], "interrupted", "{summary}");
    assert_eq!(summary["reopened"], true, "{summary}");
    assert_eq!(summary["reasoningFolded"], true, "{summary}");
    assert_eq!(summary["cspViolations"], serde_json::json!([]), "{summary}");
    // A reload shows what the stream showed, mid-way and after the end.
    for stage in ["midway", "end"] {
        assert_eq!(
            summary[stage]["live"], summary[stage]["reloaded"],
            "{stage}: {summary}"
        );
        assert_eq!(summary[stage]["live"]["meta"], 1, "{stage}: {summary}");
    }
    let end = &summary["end"]["reloaded"];
    assert_eq!(
        end["reasoning"].as_array().map(Vec::len),
        Some(2),
        "{summary}"
    );
    assert_eq!(
        end["data"],
        serde_json::json!(["data-weather"]),
        "{summary}"
    );
    assert_eq!(
        end["fields"],
        serde_json::json!(["City: Oslo · Sky: snow"]),
        "{summary}"
    );
    assert_eq!(end["metaTokens"], true, "{summary}");
    assert_eq!(
        summary["midway"]["reloaded"]["reasoning"],
        serde_json::json!(["ThinkingLooking up Oslo."]),
        "{summary}"
    );
    for stage in [
        "markdown",
        "running",
        "stopped",
        "list",
        "reopened",
        "reasoning",
        "reload-midway",
        "data-live",
        "reload-end",
    ] {
        let shot = dir.join(format!("chat-page-{stage}.png"));
        assert!(
            std::fs::metadata(&shot).is_ok_and(|m| m.len() > 0),
            "{stage}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_a_hostile_server_the_page_stops_re_sending_after_its_cap() {
    let statics = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../worker/static");
    let screenshot = artifacts_dir().join("chat-page-hostile.png");
    let summary = run_page_script(
        "chat_page_hostile.py",
        &[statics.as_os_str(), screenshot.as_os_str()],
    )
    .await;
    // The person's send, then the page's three re-sends (MAX_AUTO_RESENDS in chat.js).
    assert_eq!(summary["posts"], 4, "{summary}");
    assert_eq!(summary["after"], 0, "{summary}");
    assert!(
        summary["sentence"]
            .as_str()
            .is_some_and(|s| s.contains("stopped re-sending")),
        "{summary}"
    );
}

/// The page's editing features (`tests/browser/chat_page_editing.py`): a chat titled by its
/// first message, regenerate, an edited later message (and its answer) replacing the old, the
/// first message edited (the chat restarts from it, retitled), the chat deleted (gone from the
/// list and the server), an attached image kept across a reload, and the person's answer shown
/// on its card as sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_titles_regenerates_edits_attaches_and_shows_answers_as_sent() {
    let harness = Harness::start(chat_registry()).await;
    let base = format!("http://{}", harness.address);
    let dir = artifacts_dir();
    let summary = run_page_script("chat_page_editing.py", &[base.as_ref(), dir.as_os_str()]).await;
    assert_eq!(summary["afterRegenerate"], 1, "{summary}");
    let users = serde_json::json!(["hello there", "instead"]);
    assert_eq!(summary["users"], users, "{summary}");
    assert_eq!(summary["usersReloaded"], users, "{summary}");
    assert_eq!(
        summary["firstEdited"],
        serde_json::json!(["hi again"]),
        "{summary}"
    );
    assert_eq!(summary["repliesAfterFirstEdit"], 1, "{summary}");
    assert_eq!(summary["reopenedAnother"], true, "{summary}");
    assert_eq!(summary["deletedSnapshot"], 404, "{summary}");
    assert_eq!(summary["liveAttachments"], 1, "{summary}");
    assert_eq!(summary["reloadedAttachments"], 1, "{summary}");
    assert_eq!(summary["cspViolations"], serde_json::json!([]), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_page_answers_a_form_and_an_approval_across_a_reload_in_chromium() {
    let harness = Harness::start(chat_registry()).await;
    let screenshot = artifacts_dir().join("chat-page.png");
    let base = format!("http://{}", harness.address);
    let summary = run_page_script("chat_page.py", &[base.as_ref(), screenshot.as_os_str()]).await;
    assert_eq!(summary["repeated"], false, "{summary}");
    // Per turn: the message, the form's answer, the approval (the first sent from the reloaded
    // page); the held message went once the first turn was over.
    assert_eq!(summary["heldSent"], 4, "{summary}");
    assert_eq!(summary["posts"], 6, "{summary}");
    // The message, then the error the page settled the unrenderable call with.
    assert_eq!(summary["otherPagePosts"], 2, "{summary}");
    for stage in ["", "-empty", "-question", "-approval"] {
        let shot = artifacts_dir().join(format!("chat-page{stage}.png"));
        assert!(
            std::fs::metadata(&shot).is_ok_and(|m| m.len() > 0),
            "{stage}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_page_answers_the_demo_trees_interviewer_across_a_reload_in_chromium() {
    let harness = Harness::start(chat_registry()).await;
    let base = format!("http://{}", harness.address);
    let dir = artifacts_dir();
    let summary = run_page_script("chat_page_tree.py", &[base.as_ref(), dir.as_os_str()]).await;
    answered_once_across_a_reload(&summary, "demo_interviewer", "tree");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_page_answers_a_remote_childs_question_across_a_reload_in_chromium() {
    // The producer's `questioner` asks with a form; the consumer's delegator calls it remotely.
    let ask = baton_core::tool::ClientTool::new(
        "ask_user",
        "Asks the person.",
        serde_json::json!({"type": "object", "properties": {"question": {"type": "string"}}}),
    )
    .unwrap()
    .output_schema(serde_json::json!({"type": "string"}))
    .unwrap()
    .render(baton_core::tool::RenderHint::Elicitation);
    let questioner = baton_core::Agent::builder("questioner")
        .model(
            baton_core::ScriptedModel::default()
                .call(
                    "ask_user",
                    serde_json::json!({"question": "Who is asking?"}),
                )
                .answer("{{result:ask_user}} is asking"),
        )
        .client_tool(ask)
        .build()
        .unwrap();
    let producer = Harness::start(baton_core::AgentRegistry::new([questioner]).unwrap()).await;
    let url = format!("http://{}/agents", producer.address);
    let remote = baton_tests::remote_agents::remote(&url, "questioner");
    let consumer = Harness::start(baton_tests::remote_agents::delegating(
        baton_core::subagent::SubAgent::remote("research", "Asks the questioner.", remote),
    ))
    .await;
    let base = format!("http://{}", consumer.address);
    let dir = artifacts_dir();
    let arguments = [
        "remote_delegator",
        "Who is it?",
        "Ada",
        "got Ada is asking",
        "remote",
    ];
    let mut all = vec![base.as_ref(), dir.as_os_str()];
    all.extend(arguments.iter().map(std::ffi::OsStr::new));
    let summary = run_page_script("chat_page_tree.py", &all).await;
    answered_once_across_a_reload(&summary, "questioner", "remote");
}

/// A `chat_page_tree.py` run: the child's question (its card naming `asker`) answered once from
/// the reloaded page, nothing sent twice, both screenshots taken.
fn answered_once_across_a_reload(summary: &Value, asker: &str, name: &str) {
    assert_eq!(summary["repeated"], false, "{summary}");
    // The message; then, from the reloaded page, the one answer to the child's question.
    assert_eq!(summary["postsBeforeReload"], 1, "{summary}");
    assert_eq!(summary["posts"], 2, "{summary}");
    for named in [&summary["asker"], &summary["askerAfterReload"]] {
        assert!(
            named.as_str().is_some_and(|a| a.contains(asker)),
            "the card names the child that asks: {summary}"
        );
    }
    let dir = artifacts_dir();
    for stage in ["question", "done"] {
        let shot = dir.join(format!("chat-page-{name}-{stage}.png"));
        assert!(
            std::fs::metadata(&shot).is_ok_and(|m| m.len() > 0),
            "{stage}"
        );
    }
}

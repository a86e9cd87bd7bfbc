//! Schemathesis (PyPI, pinned by scripts/services.sh) against a live server, with an operator key
//! and with a user token: bounded generated requests on every route the document describes but
//! the streams and the pages, and none may answer 5xx, or answer a status, a media type, headers
//! or a body the document does not declare for it. (Whether every request the document allows is
//! accepted is not checked yet: a few constraints, cross-field or opaque ones such as a cursor
//! the server gave, are not in the document.)

use baton_tests::{Harness, agents, bearer_api::BearerApi};

const KEY: &str = "an operator key of at least thirty-two bytes";
/// The checks every answer must pass.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
                      response_headers_conformance,response_schema_conformance";
/// Streams (answered as they happen, never ended by a request) and pages are not fuzzed.
const SKIPPED: &str = "(/sse$|/stream$|^/chat$|^/console$)";

/// Runs Schemathesis against `base` with `bearer`: its output, if it found anything.
async fn fuzz(base: &str, bearer: &str) -> Result<(), String> {
    // Baton's virtual environment, where scripts/services.sh installs the Python tools.
    let python = crate::chat::browser::playwright_python();
    let output = tokio::process::Command::new(python)
        .args(["-m", "schemathesis.cli", "run"])
        .arg(format!("{base}/openapi.json"))
        .args(["--header", &format!("Authorization: Bearer {bearer}")])
        .args(["--checks", CHECKS])
        .args(["--exclude-path-regex", SKIPPED])
        .args([
            "--max-examples",
            "10",
            "--request-timeout",
            "10",
            "--seed",
            "1592638069",
        ])
        .arg("--no-color")
        .output()
        .await
        .expect("python runs (scripts/services.sh installs schemathesis)");
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_5xx_and_no_answer_off_the_document() {
    let harness = Harness::start_with(agents::registry(), baton_tests::keyed_options(KEY)).await;
    let base = format!("http://{}", harness.address);
    let user = BearerApi::new(&harness, KEY)
        .mint("fuzzed", &["asker_only"])
        .await;
    for (who, bearer) in [("the operator key", KEY), ("a user token", user.as_str())] {
        if let Err(found) = fuzz(&base, bearer).await {
            panic!("Schemathesis with {who} found:\n{found}");
        }
    }
}

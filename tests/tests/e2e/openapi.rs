//! `GET /openapi.json`: the OpenAPI 3.1 document generated from the routes' Rust types. It is
//! served without a credential, equal to the checked-in `docs/openapi.json` (regenerate it with
//! `BATON_WRITE_OPENAPI=1`), valid by an outside validator (PyPI `openapi-spec-validator`), and
//! names every route the server's routers declare.

use axum::{body::Body, http::Request};
use baton_tests::{Harness, agents};
use http_body_util::BodyExt;
use serde_json::Value;
use std::path::{Path, PathBuf};
use tower::ServiceExt;

/// The workspace's root (the repository's).
pub(crate) fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_document_is_the_checked_in_one_and_valid() {
    let options = baton_tests::keyed_options("an operator key of at least thirty-two bytes");
    let harness = Harness::server_only_with(agents::registry(), options).await;
    let response = baton_worker::router(harness.state.clone())
        .oneshot(Request::get("/openapi.json").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "served without a credential");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let mut served: Value = serde_json::from_slice(&body).unwrap();
    // The served document names the agent types this server serves; the checked-in one, of no
    // server in particular, does not.
    let agent = served
        .pointer_mut("/components/schemas/StartRequest/properties/agent")
        .and_then(Value::as_object_mut)
        .expect("the start's agent");
    let named = agent.remove("enum").expect("the served agent types");
    assert!(
        named
            .as_array()
            .is_some_and(|types| types.contains(&"asker_only".into()))
    );
    let pretty = format!("{}\n", serde_json::to_string_pretty(&served).unwrap());
    let checked_in = workspace().join("docs/openapi.json");
    if std::env::var_os("BATON_WRITE_OPENAPI").is_some() {
        std::fs::write(&checked_in, &pretty).unwrap();
    }
    let kept = std::fs::read_to_string(&checked_in).unwrap_or_default();
    assert!(
        kept == pretty,
        "docs/openapi.json is not today's document: run the test with BATON_WRITE_OPENAPI=1"
    );
    // Baton's virtual environment, where scripts/services.sh installs the Python tools.
    let python = crate::chat::browser::playwright_python();
    let checked = std::process::Command::new(python)
        .args([
            "-c",
            "import sys, json; from openapi_spec_validator import validate; \
             validate(json.load(open(sys.argv[1]))); print('valid')",
        ])
        .arg(&checked_in)
        .output()
        .expect("python runs (scripts/services.sh installs openapi-spec-validator)");
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
}

/// The route literals of the routers' source (`.route("/…"`, and the mount's `route("name")`).
fn declared_routes() -> Vec<String> {
    let mut found = Vec::new();
    let mut dirs = vec![workspace().join("worker/src/http")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text.split("#[cfg(test)]").next().unwrap_or_default();
            for (prefix, mount) in [(".route(\"", false), (".route(&route(\"", true)] {
                for piece in text.split(prefix).skip(1) {
                    let literal = piece.split('"').next().unwrap_or_default();
                    found.push(if mount {
                        format!("/agents/{{agentType}}/{literal}")
                    } else {
                        literal.to_owned()
                    });
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn every_declared_route_is_in_the_document() {
    // With demo mode, the document has the demo page's token route too.
    let mounts = [baton_worker::mount::Mount::new("/agents")];
    let document = baton_worker::http::openapi::document(&mounts, true);
    let paths = document["paths"].as_object().unwrap();
    // Routes named by constants (the console's and the chat page's assets) are files, not API.
    let missing: Vec<String> = declared_routes()
        .into_iter()
        .filter(|route| route.starts_with('/') && !paths.contains_key(route))
        .collect();
    assert!(
        missing.is_empty(),
        "routes missing from the document: {missing:?}"
    );
    assert!(declared_routes().len() > 20, "{:?}", declared_routes());
}

/// The document's session id pattern (every `sessionId` parameter's) accepts exactly the ids
/// the server does (`ids::is_valid_session_id`): a client validating with the document never
/// refuses an id the server takes, nor sends one it refuses.
#[test]
fn the_documents_session_id_pattern_is_the_servers_rule() {
    let text = std::fs::read_to_string(workspace().join("docs/openapi.json")).unwrap();
    let document: Value = serde_json::from_str(&text).unwrap();
    let parameters = document["paths"]["/status"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let schema = parameters
        .iter()
        .find(|p| p["name"] == "sessionId")
        .map(|p| p["schema"].clone())
        .expect("/status documents sessionId");
    assert!(schema["pattern"].is_string(), "{schema}");
    let validator = jsonschema::validator_for(&schema).unwrap();
    let hex = "0123456789abcdefABCDEF0123456789";
    let long = "a".repeat(64);
    let too_long = "a".repeat(65);
    let minted = baton_core::ids::new_session_id();
    let child = format!("{minted}.{}", &hex[..32]);
    let cases = [
        "s1",
        "a",
        "a-b_c",
        "_a",
        "a_",
        &long,
        &too_long,
        "",
        "a__b",
        "a b",
        "a/b",
        "é",
        "a.",
        &child,
        "a.0123",
        "a.0123456789abcdef0123456789abcdeg",
        "a__b.0123456789abcdef0123456789abcdef",
        "a.0123456789abcdef0123456789abcdef.0123456789abcdef0123456789abcdef",
        &minted,
    ];
    for id in cases {
        assert_eq!(
            validator.is_valid(&Value::String(id.to_owned())),
            baton_core::ids::is_valid_session_id(id),
            "{id:?}"
        );
    }
}

//! The TypeScript client (`clients/typescript`) against a live server: its types are today's
//! (`src/schema.d.ts` is what openapi-typescript makes of `docs/openapi.json`), it compiles
//! under `tsc --strict`, and in node it starts a session, answers a client call, approves a
//! call, resumes and follows both to their end, and reads a refusal by its code.

use baton_tests::{Harness, agents};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .join("clients/typescript")
}

/// Runs `node <script> <args>` in the client's folder; its standard output.
async fn node(script: &str, args: &[&str]) -> String {
    let output = tokio::process::Command::new("node")
        .arg(script)
        .args(args)
        .current_dir(client_dir())
        .output()
        .await
        .expect("node runs (scripts/services.sh installs it and the client's packages)");
    assert!(
        output.status.success(),
        "node {script} {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// README's TypeScript lines, their import and address pointed at `base`, compiled and run with
/// `BATON_TOKEN=key`: what they print.
async fn readme_lines(base: &str, key: &str) -> String {
    let readme = std::fs::read_to_string(client_dir().join("../../README.md")).unwrap();
    let after = &readme[readme
        .find("**From TypeScript.**")
        .expect("the README's section")..];
    let start = after.find("```ts\n").expect("its block") + "```ts\n".len();
    let lines = &after[start..start + after[start..].find("```").expect("the block ends")];
    let script = lines
        .replace("'@baton/client'", "'../src/index.js'")
        .replace("'http://127.0.0.1:8080'", &format!("'{base}'"));
    let file = client_dir().join("test/readme.ts");
    std::fs::write(
        &file,
        format!("// Written by e2e::typescript from README.md.\n{script}"),
    )
    .unwrap();
    let compiled = tokio::process::Command::new("node")
        .args(["node_modules/typescript/bin/tsc", "-p", "."])
        .current_dir(client_dir())
        .output()
        .await
        .unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(
        compiled.status.success(),
        "README's lines do not compile: {}",
        String::from_utf8_lossy(&compiled.stdout)
    );
    let ran = tokio::process::Command::new("node")
        .arg("dist/test/readme.js")
        .env("BATON_TOKEN", key)
        .current_dir(client_dir())
        .output()
        .await
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    String::from_utf8_lossy(&ran.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_client_runs_a_round_an_approval_and_reads_a_refusal() {
    // The checked-in types are today's document's.
    let generated = std::env::temp_dir()
        .join(baton_tests::unique("schema"))
        .with_extension("d.ts");
    let generated_arg = generated.to_string_lossy().into_owned();
    node(
        "node_modules/openapi-typescript/bin/cli.js",
        &[
            "../../docs/openapi.json",
            "--default-non-nullable",
            "false",
            "-o",
            &generated_arg,
        ],
    )
    .await;
    let kept = std::fs::read_to_string(client_dir().join("src/schema.d.ts")).unwrap();
    let today = std::fs::read_to_string(&generated).unwrap();
    let _ = std::fs::remove_file(&generated);
    assert!(
        kept == today,
        "clients/typescript/src/schema.d.ts is stale: npm run generate"
    );
    node("node_modules/typescript/bin/tsc", &["-p", "."]).await;

    const KEY: &str = "an operator key of at least thirty-two bytes";
    let harness = Harness::start_with(agents::registry(), baton_tests::keyed_options(KEY)).await;
    let base = format!("http://{}", harness.address);
    let printed = node("dist/test/live.js", &[&base, KEY]).await;
    let readme = readme_lines(&base, KEY).await;
    assert!(readme.contains("Ann"), "README's lines printed {readme:?}");
    let summary: Value = serde_json::from_str(printed.trim()).unwrap();
    assert_eq!(summary["pendingKind"], "client_tool", "{summary}");
    assert_eq!(summary["submitted"], "accepted", "{summary}");
    assert_eq!(summary["continuation"], "caller_resumes", "{summary}");
    assert_eq!(summary["end"]["status"], "completed", "{summary}");
    assert_eq!(summary["approval"], "approval", "{summary}");
    assert_eq!(summary["approvedEnd"]["status"], "completed", "{summary}");
    assert_eq!(summary["refused"]["code"], "session_not_found", "{summary}");
    assert_eq!(summary["refused"]["status"], 404, "{summary}");
    assert_eq!(summary["deleted"], 1, "{summary}");
    assert_eq!(summary["afterDelete"], "session_not_found", "{summary}");
}

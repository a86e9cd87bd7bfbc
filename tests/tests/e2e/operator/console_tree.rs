//! The console's tree outline in a real browser (`tests/browser/console_tree.py`, Debian's
//! Chromium headless, as the console's other test): a tree of three levels (`top` → `middle` →
//! `child_asker`) shows each session inside the one that started it, indented one level per
//! depth. The screenshot is kept under the target directory (`chat-artifacts/console-tree.png`).

use crate::chat::browser::artifacts_dir;
use baton_client::Client as _;
use baton_core::search::SessionSearch;
use futures::StreamExt as _;

const KEY: &str = "console-tree-operator-key";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tree_outline_shows_each_session_under_its_parent_one_level_deeper() {
    let (harness, operator) = super::console::console_harness(KEY, None).await;
    let root = operator.start("top", "go").await.unwrap().session_id;
    let mut chunks = operator.follow(&root, 0);
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.unwrap();
        if chunk.header.agent_id == root && chunk.kind.name() == "suspended" {
            break;
        }
    }
    harness.index_settled().await;
    // The tree as the API lists it: the root, then its sessions in id order, each naming its
    // parent.
    let outline = operator
        .sessions(&SessionSearch {
            root: Some(root.clone()),
            ..SessionSearch::default()
        })
        .await
        .unwrap();
    let id_of = |agent: &str| {
        outline
            .sessions
            .iter()
            .find(|row| row.agent_type == agent)
            .unwrap_or_else(|| panic!("no {agent} in {outline:?}"))
    };
    let (middle, asker) = (id_of("middle"), id_of("child_asker"));
    assert_eq!(id_of("top").parent_session_id, None);
    assert_eq!(middle.parent_session_id.as_deref(), Some(root.as_str()));
    assert_eq!(
        asker.parent_session_id.as_deref(),
        Some(middle.session_id.as_str())
    );

    let screenshot = artifacts_dir().join("console-tree.png");
    let summary =
        super::console::browse(&harness, "console_tree.py", KEY, &root, &screenshot).await;
    assert_eq!(summary["cspViolations"], serde_json::json!([]), "{summary}");
    let rows = summary["rows"].as_array().unwrap();
    let shape: Vec<(u64, &str, Option<&str>)> = rows
        .iter()
        .map(|row| {
            (
                row["depth"].as_u64().unwrap(),
                row["session"].as_str().unwrap(),
                row["parent"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            (0, root.as_str(), None),
            (1, middle.session_id.as_str(), Some(root.as_str())),
            (
                2,
                asker.session_id.as_str(),
                Some(middle.session_id.as_str())
            ),
        ]
    );
    // Indented: each level's link starts further right than its parent's.
    let x: Vec<f64> = rows.iter().map(|row| row["x"].as_f64().unwrap()).collect();
    assert!(x[0] < x[1] && x[1] < x[2], "{x:?}");
    assert!(screenshot.exists());
}

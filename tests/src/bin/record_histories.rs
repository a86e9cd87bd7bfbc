//! Records the workflow histories that the replay tests replay (`tests/fixtures/histories/`):
//! runs each scenario of `baton_tests::histories` against the Temporal dev server and Redis of
//! `scripts/services.sh` and writes each workflow's history as JSON.
//!
//! `cargo run -p baton-tests --bin record-histories`

use baton_tests::{Harness, agents, histories};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let harness = Harness::start(agents::registry()).await;
    let recorded = histories::record(&harness).await?;
    std::fs::create_dir_all(histories::directory())?;
    for (scenario, json) in recorded {
        let path = histories::path(scenario);
        std::fs::write(&path, json)?;
        println!("{} ({})", path.display(), scenario.shows);
    }
    Ok(())
}

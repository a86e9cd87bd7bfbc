//! Throughput: sessions of the demo agent per second with 20 at once.

use baton_client::Client as _;
use baton_tests::Harness;
use futures::StreamExt;
use std::time::{Duration, Instant};

async fn sessions_per_second(
    harness: &Harness,
    sessions: usize,
    concurrency: usize,
) -> anyhow::Result<f64> {
    let began = Instant::now();
    let outcomes: Vec<anyhow::Result<()>> = futures::stream::iter(0..sessions)
        .map(|_| async {
            let started = harness.client.start("demo", "go").await?;
            let chunks = harness
                .chunks_until_end(&started.session_id, Duration::from_secs(120))
                .await;
            anyhow::ensure!(
                matches!(
                    chunks.last().map(|c| &c.kind),
                    Some(baton_core::ChunkKind::End {
                        status: baton_core::chunk::EndStatus::Completed,
                        ..
                    })
                ),
                "a session did not complete"
            );
            Ok(())
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    for outcome in outcomes {
        outcome?;
    }
    Ok(sessions as f64 / began.elapsed().as_secs_f64())
}
/// Measures and prints sessions per second of the demo agent.
pub async fn print_throughput(harness: &Harness) -> anyhow::Result<()> {
    eprintln!("sessions per second");
    let rate = sessions_per_second(harness, 200, 20).await?;
    println!("| throughput | sessions/s |");
    println!("|---|---:|");
    println!("| demo agent (3 steps, 2 inline tools), 20 concurrent, 200 sessions | {rate:.1} |");
    println!();
    Ok(())
}

//! SSE fan-out: many followers of one session, the time from a chunk's write to each follower.

use crate::summary;
use baton_core::store::SessionAddress;
use baton_tests::{Harness, unique};
use futures::StreamExt;
use std::time::{Duration, Instant};

/// SSE fan-out: `BENCH_FOLLOWERS` followers of one session over HTTP on loopback; the time from
/// writing a chunk to Redis to each follower having parsed its event.
pub async fn print_fanout(harness: &Harness) -> anyhow::Result<()> {
    let followers: usize = std::env::var("BENCH_FOLLOWERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    const CHUNKS: usize = 50;
    eprintln!("SSE fan-out, {followers} followers, {CHUNKS} chunks");
    let (latencies, connect) = fanout_latencies(harness, followers, CHUNKS).await?;
    println!(
        "| SSE fan-out, {followers} followers of one session | median ms | p99 ms | samples |"
    );
    println!("|---|---:|---:|---:|");
    let (median, p99, n) = summary(latencies);
    println!("| chunk written → event parsed by a follower | {median:.2} | {p99:.2} | {n} |");
    println!(
        "| all {followers} followers connected (s) | {:.2} | | 1 |",
        connect.as_secs_f64()
    );
    Ok(())
}

async fn fanout_latencies(
    harness: &Harness,
    followers: usize,
    chunks: usize,
) -> anyhow::Result<(Vec<f64>, Duration)> {
    use baton_core::{
        ChunkKind, Message,
        store::{NewSession, StepRef},
    };
    let session = unique("fanout");
    let address = SessionAddress::root(&session);
    harness
        .store
        .create_session(NewSession {
            address: &address,
            agent_type: "fanout",
            run_id: "r1",
            stream_id: "st1",
            workflow_id: "none",
            messages: &[Message::user("go")],
            max_chunks: 0,
        })
        .await?;
    let http = reqwest::Client::new();
    let url = format!(
        "http://{}/sse?sessionId={session}&fromSequence=1",
        harness.address
    );
    let connecting = Instant::now();
    let tasks: Vec<_> = (0..followers)
        .map(|_| {
            let request = http.get(&url).send();
            tokio::spawn(async move {
                let mut body = request.await?.bytes_stream();
                let mut buffer = String::new();
                let mut received = Vec::with_capacity(chunks);
                while received.len() < chunks {
                    let Some(bytes) = body.next().await else {
                        break;
                    };
                    buffer.push_str(std::str::from_utf8(&bytes?)?);
                    while let Some(end) = buffer.find("\n\n") {
                        let now = Instant::now();
                        for line in buffer[..end].lines() {
                            if let Some(id) = line.strip_prefix("id:") {
                                received.push((id.trim().parse::<u64>()?, now));
                            }
                        }
                        buffer.drain(..end + 2);
                    }
                }
                anyhow::Ok(received)
            })
        })
        .collect();
    while (harness.state.metrics.followers.get() as usize) < followers {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let connected = connecting.elapsed();
    let mut sent = Vec::with_capacity(chunks);
    for index in 0..chunks {
        tokio::time::sleep(Duration::from_millis(20)).await;
        sent.push(Instant::now());
        harness
            .store
            .emit_model_chunks(
                StepRef {
                    address: &address,
                    stream_id: "st1",
                    run_id: "r1",
                    step: 1,
                },
                1,
                index as u32,
                &[ChunkKind::TextDelta {
                    step: 1,
                    delta: format!("delta {index} "),
                }],
            )
            .await?;
    }
    let mut latencies = Vec::with_capacity(followers * chunks);
    for task in tasks {
        for (sequence, at) in task.await?? {
            // Sequence 1 is run_start; the emitted chunks are 2..
            let written = sent[(sequence - 2) as usize];
            latencies.push(at.duration_since(written).as_secs_f64() * 1000.0);
        }
    }
    Ok((latencies, connected))
}

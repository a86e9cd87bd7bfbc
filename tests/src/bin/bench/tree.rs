//! Session trees: submit latency for a grandchild's call of a three-level tree beside a root-only
//! session's call (the submit should not grow with depth), and in a two-level tree the time from
//! the last answer (submit + resume on the root) to the root's next model step, which goes
//! through the child's resumed run, its end and report, and the root's resumed run; the same
//! for a three-level tree (the grandchild answered) and beside it a root-only session.

use crate::{hitl::KeyedTimedModel, hitl::SessionMarks, summary};
use baton_client::Client as _;
use baton_core::{Agent, ScriptedModel, message::ToolOutcome};
use baton_tests::Harness;
use serde_json::json;
use std::time::Instant;

/// The root of the two-level tree.
pub const TWO_LEVEL_ROOT: &str = "bench_tree_root";

/// Trees (and root-only sessions) per measurement.
const SAMPLES: usize = 30;

/// `bench_tree_root`: delegates to `child_asker` (which asks the user), then answers; its model
/// notes when each of its calls starts.
pub fn two_level_root(marks: &SessionMarks) -> Agent {
    let script = ScriptedModel::default()
        .call_id_prefix("btr")
        .call("subagent__child_asker", json!({"message": "ask"}))
        .answer("root got {{result:subagent__child_asker}}");
    Agent::builder(TWO_LEVEL_ROOT)
        .model(KeyedTimedModel::new(script, marks))
        .sub_agent("child_asker", "Asks the user.")
        .build()
        .unwrap()
}

/// The root of the three-level tree.
pub const THREE_LEVEL_ROOT: &str = "bench_tree_top";

/// `bench_tree_top`: delegates to `middle` (which delegates to `child_asker`, which asks the
/// user), then answers; its model notes when each of its calls starts.
pub fn three_level_root(marks: &SessionMarks) -> Agent {
    let script = ScriptedModel::default()
        .call_id_prefix("btt")
        .call("subagent__middle", json!({"message": "go down"}))
        .answer("top got {{result:subagent__middle}}");
    Agent::builder(THREE_LEVEL_ROOT)
        .model(KeyedTimedModel::new(script, marks))
        .sub_agent("middle", "Delegates further.")
        .build()
        .unwrap()
}

/// The agents the section needs besides its own root.
pub fn agents() -> Vec<Agent> {
    use baton_tests::tree_agents::{child_asker, middle, top};
    vec![child_asker(), middle(), top()]
}

/// Starts `agent` with `message` and waits until the whole session (tree) is suspended.
async fn suspended(harness: &Harness, agent: &str, message: &str) -> anyhow::Result<String> {
    let started = harness.client.start(agent, message).await?;
    harness.chunks_until_suspended(&started.session_id).await;
    Ok(started.session_id)
}

/// One submit per session, on the root, for call `call`.
async fn submit_times(
    harness: &Harness,
    sessions: &[String],
    call: &str,
) -> anyhow::Result<Vec<f64>> {
    let answer = ToolOutcome::Result(json!({"answer": "blue"}));
    let mut times = Vec::with_capacity(sessions.len());
    for session in sessions {
        let began = Instant::now();
        harness.client.submit(session, call, &answer).await?;
        times.push(began.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(times)
}

/// Answer → the root's next model call, `SAMPLES` times: a session of `agent` (a timed model)
/// suspended on `call` (its own, or a descendant's), answered and resumed on the root.
async fn continuations(
    harness: &Harness,
    marks: &SessionMarks,
    agent: &str,
    call: &str,
) -> anyhow::Result<Vec<f64>> {
    let answer = ToolOutcome::Result(json!({"answer": "blue"}));
    let mut continuation = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        let key = baton_tests::unique("tree");
        let root = suspended(harness, agent, &key).await?;
        let last = harness.client.status(&root).await?.last_sequence;
        let began = Instant::now();
        harness.client.submit(&root, call, &answer).await?;
        harness.client.resume(&root).await?;
        harness.chunks_after_until_suspended(&root, last).await;
        let stepped = marks
            .lock()
            .unwrap()
            .get(&key)
            .and_then(|m| m.get(1).copied());
        let stepped =
            stepped.ok_or_else(|| anyhow::anyhow!("the root {root} made no second model call"))?;
        continuation.push((stepped - began).as_secs_f64() * 1000.0);
    }
    Ok(continuation)
}

/// Measures and prints the section.
pub async fn print_tree(harness: &Harness, marks: &SessionMarks) -> anyhow::Result<()> {
    eprintln!("tree: {SAMPLES} root-only sessions and {SAMPLES} three-level trees");
    let mut flat = Vec::with_capacity(SAMPLES);
    let mut deep = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        flat.push(suspended(harness, "bench_ask", "go").await?);
        deep.push(suspended(harness, "top", "go").await?);
    }
    let flat_submits = summary(submit_times(harness, &flat, "call_1_1").await?);
    let deep_submits = summary(submit_times(harness, &deep, "ca_1_1").await?);

    eprintln!(
        "tree: last answer → root's next model step, {SAMPLES} root-only sessions and two- and three-level trees"
    );
    let root_only = summary(continuations(harness, marks, crate::hitl::AGENT, "call_1_1").await?);
    let two_level = summary(continuations(harness, marks, TWO_LEVEL_ROOT, "ca_1_1").await?);
    let three_level = summary(continuations(harness, marks, THREE_LEVEL_ROOT, "ca_1_1").await?);

    println!("| session trees | median ms | p99 ms | samples |");
    println!("|---|---:|---:|---:|");
    let row = |name: &str, (median, p99, n): (f64, f64, usize)| {
        println!("| {name} | {median:.2} | {p99:.2} | {n} |");
    };
    row("submit over HTTP, root-only session's call", flat_submits);
    row(
        "submit over HTTP, a grandchild's call (three-level tree)",
        deep_submits,
    );
    row(
        "root-only session: answer (submit + resume) → root's next model step",
        root_only,
    );
    row(
        "two-level tree: last answer (submit + resume) → root's next model step",
        two_level,
    );
    row(
        "three-level tree: the grandchild's answer (submit + resume) → root's next model step",
        three_level,
    );
    println!();
    Ok(())
}

//! Driving sessions of a `batond` server over HTTP, as a client would: the rounds of the
//! process sections (`rounds`, `soak`). A round is submit → resume → the resumed run's chunks
//! up to its next pause (a suspension or the end); the time to the resumed step's first chunk
//! (`step_start`) is noted on the way.

use baton_client::{Client as _, HttpClient};
use baton_core::{ChunkKind, message::ToolOutcome};
use futures::StreamExt;
use std::time::{Duration, Instant};

/// How long one pause may take before the benchmark gives up on the session.
const PAUSE_LIMIT: Duration = Duration::from_secs(120);

/// Where a session stopped: the last sequence read, whether the run ended, and when its first
/// `step_start` after the call arrived.
pub struct Pause {
    pub last_sequence: u64,
    pub ended: bool,
    pub first_step: Option<Instant>,
}

/// Follows `session` from after `after` to its next suspension or end.
pub async fn next_pause(client: &HttpClient, session: &str, after: u64) -> anyhow::Result<Pause> {
    let mut follow = client.follow(session, after);
    let read = async {
        let mut pause = Pause {
            last_sequence: after,
            ended: false,
            first_step: None,
        };
        while let Some(chunk) = follow.next().await {
            let chunk = chunk?;
            pause.last_sequence = chunk.sequence;
            match chunk.kind {
                ChunkKind::StepStart { .. } if pause.first_step.is_none() => {
                    pause.first_step = Some(Instant::now());
                }
                ChunkKind::Suspended { .. } => return Ok(pause),
                ChunkKind::End { .. } => {
                    pause.ended = true;
                    return Ok(pause);
                }
                _ => {}
            }
        }
        anyhow::bail!("the stream of {session} closed before a pause")
    };
    tokio::time::timeout(PAUSE_LIMIT, read)
        .await
        .map_err(|_| anyhow::anyhow!("{session} did not pause within {PAUSE_LIMIT:?}"))?
}

/// One round: answers `call` with `answer`, resumes, and follows to the next pause. Returns the
/// pause and the time from the submit's sending to the resumed step's first chunk.
pub async fn round(
    client: &HttpClient,
    session: &str,
    call: &str,
    answer: &ToolOutcome,
    after: u64,
) -> anyhow::Result<(Pause, Option<Duration>)> {
    let asked = Instant::now();
    client.submit(session, call, answer).await?;
    client.resume(session).await?;
    let pause = next_pause(client, session, after).await?;
    let to_step = pause.first_step.map(|at| at - asked);
    Ok((pause, to_step))
}

/// Starts a session of `agent` and follows it to its first pause.
pub async fn started(client: &HttpClient, agent: &str) -> anyhow::Result<(String, Pause)> {
    let session = client.start(agent, "go").await?.session_id;
    let pause = next_pause(client, &session, 0).await?;
    Ok((session, pause))
}

/// The call id the scripted model of agents-file agent `agent` gives the one call of its
/// `turn`-th turn (from 1): an agents file's scripted model prefixes its call ids with the agent.
pub fn call_of_turn(agent: &str, turn: usize) -> String {
    format!("{agent}_{turn}_1")
}

/// An agents-file entry: a scripted agent whose first `asks` turns each call the client tool
/// `ask` once, then answers "done".
pub fn asking_agent(name: &str, asks: usize, extra: &str) -> String {
    let ask = r#"{ tool_calls = [{ name = "ask", arguments = {} }] }"#;
    let turns: Vec<&str> = std::iter::repeat_n(ask, asks)
        .chain([r#"{ text = "done" }"#])
        .collect();
    format!(
        "[[agent]]\nname = \"{name}\"\nmax_steps = {}\nclient_tool_timeout_secs = 3600\n{extra}\n\
         [agent.model]\nkind = \"scripted\"\nturns = [\n  {}\n]\n\n\
         [[agent.client_tool]]\nname = \"ask\"\ndescription = \"Asks the person.\"\n\
         input_schema = {{ type = \"object\" }}\n\n",
        asks + 1,
        turns.join(",\n  ")
    )
}

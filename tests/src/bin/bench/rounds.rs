//! Human-in-the-loop rounds at higher concurrency with real processes: one `batond server` and
//! one or two `batond worker`s against the benchmark's own Redis and the Temporal dev server.
//! Rounds per second at 20, 100 and 500 sessions at once (`BENCH_ROUNDS_CONCURRENCY`), with one
//! and with two workers, and the CPU each process spent per round, read from `/proc`; then
//! rounds through the chat route (an answer POSTed to `/chat`, the next step streamed back)
//! beside the plain API, 20 sessions at once.

use crate::{
    procs::{self, Batond, CpuMeter},
    remote, round_phases, summary,
};
use baton_client::HttpClient;
use baton_core::message::ToolOutcome;
use futures::{StreamExt, TryStreamExt};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

pub(crate) const AGENT: &str = "scale_ask";

/// Rounds per configuration in all (`BENCH_ROUNDS_TOTAL`, default 2000), spread over its
/// sessions, at least 3 each.
pub(crate) fn rounds_per_session(sessions: usize) -> usize {
    let total: usize = std::env::var("BENCH_ROUNDS_TOTAL")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    (total / sessions).max(3)
}

fn concurrencies() -> Vec<usize> {
    std::env::var("BENCH_ROUNDS_CONCURRENCY")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![20, 100, 500])
}

/// The most rounds any configuration runs per session, plus room: the agent's script length.
pub(crate) const MOST_ROUNDS: usize = 120;

/// One configuration's figures.
pub(crate) struct Figures {
    rounds: usize,
    seconds: f64,
    to_step: Vec<f64>,
    /// The plain API's rounds, by phase.
    timed: Vec<round_phases::Timed>,
    cpu: Vec<(String, f64)>,
}

impl Figures {
    /// The CPU ms a round of the metered process `name` (NaN if it was not metered).
    pub(crate) fn cpu_ms_per_round(&self, name: &str) -> f64 {
        self.cpu
            .iter()
            .find(|(metered, _)| metered == name)
            .map_or(f64::NAN, |(_, seconds)| self.per_round_ms(*seconds))
    }

    /// `seconds` of CPU over the configuration's rounds, in ms a round.
    fn per_round_ms(&self, seconds: f64) -> f64 {
        seconds * 1000.0 / self.rounds as f64
    }

    pub(crate) fn rounds_per_second(&self) -> f64 {
        self.rounds as f64 / self.seconds
    }

    pub(crate) fn print(&self, label: &str) {
        let (p50, p99, _) = summary(self.to_step.clone());
        let total = self.per_round_ms(self.cpu.iter().map(|(_, s)| s).sum());
        let cpu = if self.cpu.is_empty() {
            "–".to_owned()
        } else {
            let each: Vec<String> = self
                .cpu
                .iter()
                .map(|(name, seconds)| format!("{name} {:.2}", self.per_round_ms(*seconds)))
                .collect();
            format!("{} (all {total:.2})", each.join(", "))
        };
        println!(
            "| {label} | {:.1} | {p50:.1} | {p99:.1} | {cpu} |",
            self.rounds_per_second(),
        );
    }
}

/// Starts `count` sessions (50 at a time) and follows each to its first suspension.
pub(crate) async fn suspended_sessions(
    client: &HttpClient,
    count: usize,
) -> anyhow::Result<Vec<(String, u64)>> {
    futures::stream::iter(0..count)
        .map(|_| async {
            let (session, pause) = remote::started(client, AGENT).await?;
            anyhow::Ok((session, pause.last_sequence))
        })
        .buffer_unordered(50)
        .try_collect()
        .await
}

/// Each session answers `rounds` rounds over the plain API, all sessions at once.
pub(crate) async fn api_rounds(
    client: &HttpClient,
    sessions: Vec<(String, u64)>,
    rounds: usize,
    meter: &[(&str, Option<u32>)],
) -> anyhow::Result<Figures> {
    let answer = ToolOutcome::Result(json!({"answer": "ok"}));
    let cpu = CpuMeter::start(meter);
    let began = Instant::now();
    let outcomes = futures::future::join_all(sessions.into_iter().map(|(session, mut after)| {
        let answer = answer.clone();
        async move {
            let mut timed = Vec::with_capacity(rounds);
            for turn in 1..=rounds {
                let call = remote::call_of_turn(AGENT, turn);
                let (pause, round) =
                    round_phases::timed_round(client, &session, &call, &answer, after).await?;
                anyhow::ensure!(!pause.ended, "{session} ended at round {turn}");
                after = pause.last_sequence;
                timed.extend(round);
            }
            anyhow::Ok(timed)
        }
    }))
    .await;
    let seconds = began.elapsed().as_secs_f64();
    let cpu = cpu.used();
    let mut timed = Vec::new();
    let mut done = 0;
    for outcome in outcomes {
        timed.extend(outcome?);
        done += rounds;
    }
    Ok(Figures {
        rounds: done,
        seconds,
        to_step: timed.iter().map(round_phases::Timed::to_step).collect(),
        timed,
        cpu,
    })
}

/// POSTs a `useChat` body and reads its SSE answer to `[DONE]`; returns when the first
/// `start-step` frame arrived, and whether the answer ended the turn with a new client call.
async fn chat_post(
    http: &reqwest::Client,
    base: &str,
    body: &Value,
) -> anyhow::Result<(Option<Instant>, bool)> {
    let response = http.post(format!("{base}/chat")).json(body).send().await?;
    anyhow::ensure!(
        response.status().is_success(),
        "chat answered {}",
        response.status()
    );
    let mut bytes = response.bytes_stream();
    let mut text = String::new();
    let mut first_step = None;
    let mut asked = false;
    while let Some(piece) = bytes.next().await {
        text.push_str(&String::from_utf8_lossy(&piece?));
        while let Some(end) = text.find("\n\n") {
            let frame: String = text.drain(..end + 2).collect();
            let Some(data) = frame.trim().strip_prefix("data: ") else {
                continue;
            };
            if data == "[DONE]" {
                return Ok((first_step, asked));
            }
            let chunk: Value = serde_json::from_str(data)?;
            match chunk["type"].as_str() {
                Some("start-step") if first_step.is_none() => first_step = Some(Instant::now()),
                Some("tool-input-available") => asked = true,
                _ => {}
            }
        }
    }
    anyhow::bail!("the chat answer ended without [DONE]")
}

/// Each of `sessions` chats answers `rounds` rounds through `/chat`, all at once: one request a
/// round (the answer, the resume and the stream of the next step); the processes of `meter`
/// metered over the rounds.
async fn chat_rounds(
    base: &str,
    sessions: usize,
    rounds: usize,
    meter: &[(&str, Option<u32>)],
) -> anyhow::Result<Figures> {
    let http = reqwest::Client::new();
    let chats: Vec<String> = (0..sessions)
        .map(|_| uuid::Uuid::new_v4().simple().to_string())
        .collect();
    futures::stream::iter(chats.iter())
        .map(|chat| {
            let body = json!({"id": chat, "trigger": "submit-message", "agent": AGENT,
                "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}]});
            let http = &http;
            async move { chat_post(http, base, &body).await }
        })
        .buffer_unordered(50)
        .try_collect::<Vec<_>>()
        .await?;
    let cpu = CpuMeter::start(meter);
    let began = Instant::now();
    let outcomes = futures::future::join_all(chats.iter().map(|chat| {
        let http = &http;
        async move {
            let mut to_step = Vec::with_capacity(rounds);
            for turn in 1..=rounds {
                let part = json!({"type": "tool-ask", "toolCallId": remote::call_of_turn(AGENT, turn),
                    "state": "output-available", "input": {}, "output": {"answer": "ok"}});
                let message = format!("a{turn}");
                let body = json!({"id": chat, "trigger": "submit-message", "messageId": message,
                    "messages": [{"id": message, "role": "assistant",
                                  "parts": [{"type": "step-start"}, part]}]});
                let asked = Instant::now();
                let (first_step, again) = chat_post(http, base, &body).await?;
                anyhow::ensure!(again, "chat {chat} did not ask again at round {turn}");
                to_step.extend(first_step.map(|at| (at - asked).as_secs_f64() * 1000.0));
            }
            anyhow::Ok(to_step)
        }
    }))
    .await;
    let seconds = began.elapsed().as_secs_f64();
    let cpu = cpu.used();
    let mut to_step = Vec::new();
    for outcome in outcomes {
        to_step.extend(outcome?);
    }
    Ok(Figures {
        rounds: sessions * rounds,
        seconds,
        to_step,
        timed: Vec::new(),
        cpu,
    })
}

pub async fn print_rounds() -> anyhow::Result<()> {
    let redis = procs::own_redis(false).await?;
    let agents = procs::agents_file("rounds", &remote::asking_agent(AGENT, MOST_ROUNDS, ""))?;
    let prefix = format!("bench{}", std::process::id());
    let task_queue = format!("bench-rounds-{}", std::process::id());
    // BENCH_REDIS_UNIX=1: the processes reach Redis over its Unix socket instead of loopback TCP.
    let unix = std::env::var_os("BENCH_REDIS_UNIX").is_some();
    let redis_url = if unix { redis.unix_url() } else { redis.url() };
    let flags = procs::common_flags(&redis_url, &prefix, &task_queue, &agents);
    let server = procs::launcher()?.server("rounds-server", &flags).await?;
    let client = HttpClient::new(server.base_url());
    let temporal = procs::temporal_pid();
    println!("\n## HITL rounds with real processes (batond server + batond worker ×1/×2)\n");
    println!(
        "Each round: submit → resume → the resumed step → the next suspension, over HTTP; the \
         Temporal dev server shared, Redis the benchmark's own ({}).\n",
        if unix {
            "over its Unix socket"
        } else {
            "over loopback TCP"
        }
    );
    println!(
        "| configuration | rounds/s | answer → next step p50 ms | p99 ms | CPU ms per round: process |"
    );
    println!("|---|---:|---:|---:|---|");
    let mut workers: Vec<Batond> = Vec::new();
    let mut phases = Vec::new();
    let mut first = (0, 0.0);
    // The dev server slows as its history grows: the ceiling is measured right before and
    // right after each configuration it is set beside (the first, and the one process's,
    // which runs next to it).
    let bare = crate::bare::spawn_bare_worker(
        baton_worker::connect_temporal(&baton_tests::temporal_settings()).await?,
    );
    let mut ceilings = vec![ceiling(&bare, concurrencies().first().copied().unwrap_or(20)).await?];
    let mut one = None;
    for count in [1, 2] {
        while workers.len() < count {
            workers.push(
                procs::launcher()?.worker(&format!("rounds-worker-{}", workers.len()), &flags)?,
            );
        }
        // The workers poll before the first session starts.
        tokio::time::sleep(Duration::from_secs(2)).await;
        for sessions in concurrencies() {
            let rounds = rounds_per_session(sessions).min(MOST_ROUNDS - 1);
            let started = suspended_sessions(&client, sessions).await?;
            let mut meter = vec![
                ("temporal", temporal),
                ("server", server.pid()),
                ("redis", redis.pid()),
            ];
            let names = ["worker 1", "worker 2"];
            for (name, worker) in names.iter().zip(&workers) {
                meter.push((name, worker.pid()));
            }
            let figures = api_rounds(&client, started, rounds, &meter).await?;
            let workers = if count == 1 { "1 worker" } else { "2 workers" };
            figures.print(&format!("{sessions} sessions, {workers}, API"));
            // The first configuration's rounds are split by phase and set beside the ceiling.
            if count == 1 && phases.is_empty() {
                first = (sessions, figures.rounds as f64 / figures.seconds);
                phases = figures.timed;
                ceilings.push(ceiling(&bare, sessions).await?);
                // The same rounds with the server and its worker in one process (its resumed
                // runs start eagerly), on a task queue of its own.
                one = Some(
                    crate::rounds_one_process::rounds(
                        sessions, &redis, &redis_url, &prefix, &agents, temporal,
                    )
                    .await?,
                );
                ceilings.push(ceiling(&bare, sessions).await?);
            }
        }
    }
    let rounds = rounds_per_session(20).min(MOST_ROUNDS - 1);
    let started = suspended_sessions(&client, 20).await?;
    // Both metered: what a round costs Baton over the plain API (three requests: the answer,
    // the resume, the follow) and through `/chat` (one).
    let mut meter = vec![
        ("temporal", temporal),
        ("server", server.pid()),
        ("redis", redis.pid()),
    ];
    for (name, worker) in ["worker 1", "worker 2"].iter().zip(&workers) {
        meter.push((name, worker.pid()));
    }
    let api = api_rounds(&client, started, rounds, &meter).await?;
    let chat = chat_rounds(&server.base_url(), 20, rounds, &meter).await?;
    api.print("20 sessions, 2 workers, API (beside the chat row)");
    chat.print("20 sessions, 2 workers, `/chat`");
    println!(
        "\nchat ÷ API rounds/s: {:.2}× (target ≥ 0.8×)",
        (chat.rounds as f64 / chat.seconds) / (api.rounds as f64 / api.seconds)
    );
    drop(workers);
    drop(server);
    round_phases::print(first.0, &phases).await?;
    if let Some((sessions, one)) = one {
        round_phases::print_labelled("`batond dev`", sessions, &one.timed).await?;
        print_ceiling(&ceilings, first, one.rounds as f64 / one.seconds);
    }
    procs::remove_redis(redis);
    Ok(())
}

/// The dev server's ceiling now (issue 40's goal 4): bare workflows of a round's fewest
/// operations (a start, one empty local activity, the end), `sessions` at a time; per second.
async fn ceiling(bare: &crate::bare::BareWorker, sessions: usize) -> anyhow::Result<f64> {
    // Its worker polls before the first start.
    tokio::time::sleep(Duration::from_secs(1)).await;
    crate::bare::bare_workflows_per_second(bare, 1500, sessions, true).await
}

/// The ceilings measured before the first configuration, between it and the one process's, and
/// after that, beside each configuration's rounds/s: each with the mean of the two around it.
fn print_ceiling(ceilings: &[f64], (sessions, separate): (usize, f64), one_process: f64) {
    let [before, between, after] = ceilings else {
        return;
    };
    let around_separate = (before + between) / 2.0;
    let around_one = (between + after) / 2.0;
    println!(
        "\nThe dev server's ceiling in this run (a start, one empty local activity, the end; \
         {sessions} at a time): {before:.1}, {between:.1} and {after:.1} bare workflows/s, before \
         the first configuration, after it and after the one process's. {sessions} sessions with \
         1 worker ran {separate:.1} rounds/s, {:.0}% of the ceiling around it (goal ≥ 95%); with \
         the server and the worker in one process (`batond dev`, eager starts), \
         {one_process:.1} rounds/s, {:.0}% of the ceiling around it.",
        100.0 * separate / around_separate,
        100.0 * one_process / around_one,
    );
}

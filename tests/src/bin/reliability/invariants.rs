//! The invariants checked after every scenario, read straight from Redis (raw JSON, so a chunk
//! kind this binary does not know cannot hide a fault): every accepted answer is in its log
//! exactly once; every tool call in every log has exactly one result (or is still awaited by a
//! suspended session); every stream is gapless with no chunk written twice; every session ends or
//! is suspended.

use crate::load::Accepted;
use baton_core::{
    Message,
    message::ToolOutcome,
    store::{SessionAddress, Store},
};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// What the invariants found; an empty list is a held invariant.
#[derive(Debug, Default)]
pub struct Findings {
    pub sessions: usize,
    pub accepted: usize,
    /// Accepted answers found in no log entry.
    pub lost: Vec<String>,
    /// When each lost answer had been accepted.
    pub lost_at: Vec<std::time::Instant>,
    /// Accepted answers found more than once.
    pub duplicated: Vec<String>,
    /// Tool calls with no result (outside a suspension) or more than one; results with no call.
    pub unpaired: Vec<String>,
    /// Calls left without a result by a stopped run, which the next turn closes.
    pub left_by_stop: usize,
    /// Streams with a gap, a sequence out of place, or a chunk written twice.
    pub stream: Vec<String>,
    /// Sessions neither ended nor suspended, or whose stream's last chunk disagrees.
    pub unfinished: Vec<String>,
}

impl Findings {
    pub fn held(&self) -> bool {
        self.lost.is_empty()
            && self.duplicated.is_empty()
            && self.unpaired.is_empty()
            && self.stream.is_empty()
            && self.unfinished.is_empty()
    }

    /// One line per broken invariant, with the first few examples.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (name, list) in [
            ("accepted answers lost", &self.lost),
            ("accepted answers duplicated", &self.duplicated),
            ("tool calls without exactly one result", &self.unpaired),
            ("stream faults", &self.stream),
            ("sessions neither ended nor suspended", &self.unfinished),
        ] {
            if !list.is_empty() {
                let examples: Vec<&str> = list.iter().take(3).map(String::as_str).collect();
                lines.push(format!("{name}: {} ({})", list.len(), examples.join("; ")));
            }
        }
        lines
    }
}

/// One session's keys: `<prefix>:{<root>}:<session>:`.
struct SessionKeys {
    session: String,
    base: String,
}

impl SessionKeys {
    fn key(&self, what: &str) -> String {
        format!("{}{what}", self.base)
    }
}

/// Every session under `prefix`, found by its state hash.
async fn sessions(
    connection: &mut impl redis::aio::ConnectionLike,
    prefix: &str,
) -> anyhow::Result<Vec<SessionKeys>> {
    let keys = crate::scan(connection, &format!("{prefix}:*:state")).await?;
    Ok(keys
        .into_iter()
        .filter_map(|key| {
            let base = key.strip_suffix("state")?.to_owned();
            let session = base.trim_end_matches(':').rsplit(':').next()?.to_owned();
            Some(SessionKeys { session, base })
        })
        .collect())
}

/// How long the check waits for running sessions to end or suspend before it reads them.
const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(90);

/// Waits until no session under `prefix` is `active` (or [`SETTLE_LIMIT`] has passed): the
/// invariants are about where sessions come to rest.
async fn settle(
    connection: &mut redis::aio::MultiplexedConnection,
    prefix: &str,
) -> anyhow::Result<()> {
    let began = std::time::Instant::now();
    loop {
        let mut active = 0;
        for keys in sessions(connection, prefix).await? {
            let status: Option<String> = redis::cmd("HGET")
                .arg(keys.key("state"))
                .arg("status")
                .query_async(connection)
                .await?;
            if status.as_deref() == Some("active") {
                active += 1;
            }
        }
        if active == 0 || began.elapsed() > SETTLE_LIMIT {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// A connection to one node and a store over it, once no session under `prefix` is `active`.
async fn settled_node(
    node: &str,
    prefix: &str,
) -> anyhow::Result<(redis::aio::MultiplexedConnection, Store)> {
    let client = redis::Client::open(node)?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let store = Store::connect(node, prefix.to_owned()).await?;
    settle(&mut connection, prefix).await?;
    Ok((connection, store))
}

/// Checks every session under `prefix` and every answer in `accepted`. `nodes` are the Redis
/// servers holding the keys: one, or each master of a cluster (a session's keys are all in one
/// slot, so on one node, which plain commands can read).
pub async fn check(
    nodes: &[String],
    prefix: &str,
    accepted: &[Accepted],
) -> anyhow::Result<Findings> {
    let mut findings = Findings {
        accepted: accepted.len(),
        ..Findings::default()
    };
    let mut logs: HashMap<String, Vec<Message>> = HashMap::new();
    for node in nodes {
        let (mut connection, store) = settled_node(node, prefix).await?;
        for keys in sessions(&mut connection, prefix).await? {
            findings.sessions += 1;
            let log = check_session(&mut connection, &store, &keys, &mut findings).await?;
            logs.insert(keys.session, log);
        }
    }
    for answer in accepted {
        let label = format!("{}/{}", answer.session_id, answer.tool_call_id);
        let found = logs
            .get(&answer.session_id)
            .map(|log| {
                log.iter()
                    .filter(|m| {
                        matches!(m, Message::Tool(result)
                        if result.tool_call_id == answer.tool_call_id
                            && result.outcome == ToolOutcome::Result(answer.result.clone()))
                    })
                    .count()
            })
            .unwrap_or(0);
        match found {
            1 => {}
            0 => {
                findings.lost.push(label);
                findings.lost_at.push(answer.at);
            }
            _ => findings.duplicated.push(label),
        }
    }
    Ok(findings)
}

async fn check_session(
    connection: &mut redis::aio::MultiplexedConnection,
    store: &Store,
    keys: &SessionKeys,
    findings: &mut Findings,
) -> anyhow::Result<Vec<Message>> {
    let session = &keys.session;
    let state: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(keys.key("state"))
        .query_async(connection)
        .await?;
    let status = state.get("status").cloned().unwrap_or_default();
    let pending: HashSet<String> = redis::cmd("HKEYS")
        .arg(keys.key("pending"))
        .query_async(connection)
        .await?;
    let raw_log: Vec<String> = redis::cmd("LRANGE")
        .arg(keys.key("messages"))
        .arg(0)
        .arg(-1)
        .query_async(connection)
        .await?;
    let log: Vec<Message> = raw_log
        .iter()
        .map(|entry| serde_json::from_str(entry))
        .collect::<Result<_, _>>()?;

    // Every call has exactly one result, unless a suspended session still awaits it.
    let mut results: BTreeMap<&str, usize> = BTreeMap::new();
    for message in &log {
        if let Message::Tool(result) = message {
            *results.entry(result.tool_call_id.as_str()).or_default() += 1;
        }
    }
    let mut calls = HashSet::new();
    for message in &log {
        if let Message::Assistant { tool_calls, .. } = message {
            for call in tool_calls {
                calls.insert(call.id.as_str());
                let count = results.get(call.id.as_str()).copied().unwrap_or(0);
                let awaited =
                    count == 0 && status == "suspended_client_tool" && pending.contains(&call.id);
                // A stopped run's open calls are closed (`not_executed`) by the next turn.
                let stopped = count == 0 && state.contains_key("stop");
                if stopped {
                    findings.left_by_stop += 1;
                }
                if count != 1 && !awaited && !stopped {
                    findings
                        .unpaired
                        .push(format!("{session}/{}: {count} results", call.id));
                }
            }
        }
    }
    for call in results.keys() {
        if !calls.contains(call) {
            findings
                .unpaired
                .push(format!("{session}/{call}: a result without a call"));
        }
    }

    let chunks = stream(store, session).await?;
    check_stream(session, &state, &chunks, findings);

    let last = chunks.last().and_then(|(_, chunk)| chunk["type"].as_str());
    let consistent = match status.as_str() {
        "completed" | "failed" | "interrupted" => last == Some("end"),
        "suspended_client_tool" => last == Some("suspended"),
        _ => false,
    };
    if !consistent {
        findings.unfinished.push(format!(
            "{session}: status {status:?}, last chunk {}",
            last.unwrap_or("none")
        ));
    }
    Ok(log)
}

/// The stream's entries: (entry sequence, chunk JSON), read by the store's own reader, which
/// puts back the headers the entries do not repeat, but not decoded into chunk kinds.
async fn stream(store: &Store, session: &str) -> anyhow::Result<Vec<(u64, Value)>> {
    let address = SessionAddress {
        root_session_id: baton_core::ids::root_of(session).to_owned(),
        session_id: session.to_owned(),
    };
    store
        .chunk_texts_after(&address, 0, u32::MAX as usize)
        .await?
        .into_iter()
        .map(|(sequence, text)| Ok((sequence, serde_json::from_str(&text)?)))
        .collect()
}

/// Gapless from 1 to the state's `lastSequence`, each chunk's own sequence its entry's, and no
/// chunk written twice: a step's start and end, a call's start, end and approval request, a
/// suspension and a run's start and end each appear once. A step the stream says was discarded
/// (`step_discarded`) may repeat its model-phase chunks, and what a `rewind` chunk drops may be
/// written again after it.
fn check_stream(
    session: &str,
    state: &HashMap<String, String>,
    chunks: &[(u64, Value)],
    findings: &mut Findings,
) {
    let last_sequence: u64 = state
        .get("lastSequence")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut expected = chunks.first().map(|(s, _)| *s).unwrap_or(1);
    if expected != 1 {
        findings
            .stream
            .push(format!("{session}: first sequence {expected}"));
    }
    for (sequence, chunk) in chunks {
        if *sequence != expected {
            findings
                .stream
                .push(format!("{session}: sequence {sequence} where {expected}"));
        }
        if chunk["sequence"].as_u64() != Some(*sequence) {
            findings.stream.push(format!(
                "{session}: entry {sequence} holds {}",
                chunk["sequence"]
            ));
        }
        expected = sequence + 1;
    }
    if chunks.last().map(|(s, _)| *s).unwrap_or(0) != last_sequence {
        findings.stream.push(format!(
            "{session}: stream ends before lastSequence {last_sequence}"
        ));
    }
    let discarded: HashSet<(String, u64)> = chunks
        .iter()
        .filter(|(_, c)| c["type"] == "step_discarded")
        .map(|(_, c)| (c["runId"].to_string(), c["step"].as_u64().unwrap_or(0)))
        .collect();
    // Each identity with the sequence it was first written at, and the run and step that wrote it.
    let mut seen: HashMap<String, (u64, String, u64)> = HashMap::new();
    for (sequence, chunk) in chunks {
        let kind = chunk["type"].as_str().unwrap_or("?");
        let step = chunk["step"].as_u64().unwrap_or(0);
        if kind == "rewind" {
            // A reader drops what came after the checkpoint's position: what follows may write
            // those chunks again.
            let position = chunk["streamSequence"].as_u64().unwrap_or(0);
            seen.retain(|_, (first, _, _)| *first <= position);
            continue;
        }
        if kind == "step_discarded" {
            // A reader drops the step's earlier chunks (a model retry, or a stop mid-step): a
            // later run may make the same calls again (a scripted model's call ids repeat).
            let run = chunk["runId"].to_string();
            seen.retain(|_, (_, seen_run, seen_step)| !(*seen_run == run && *seen_step == step));
            continue;
        }
        // A root's stream carries its children's chunks too: a step is its session's (`agentId`).
        let identity = match kind {
            "run_start" | "end" => format!("{kind} {}", chunk["runId"]),
            "step_end" | "suspended" => format!("{kind} {} {step}", chunk["agentId"]),
            "step_start" if !discarded.contains(&(chunk["runId"].to_string(), step)) => {
                format!("{kind} {} {step}", chunk["runId"])
            }
            "tool_start" | "tool_end" | "tool_approval_request" => {
                format!("{kind} {}", chunk["toolCallId"])
            }
            _ => continue,
        };
        if let Some((first, _, _)) = seen.get(&identity) {
            findings.stream.push(format!(
                "{session}: {identity} at {first} and again at {sequence}"
            ));
        } else {
            seen.insert(identity, (*sequence, chunk["runId"].to_string(), step));
        }
    }
}

/// The tree invariants over every session under `prefix`, one line per fault: on a parent's
/// stream each sub-agent call starts one child (one `subagent_start` per call, naming one child
/// session), every child session is started by exactly one such chunk, and an ended parent has
/// closed every `subagent_start` with its `subagent_end`.
pub async fn tree_faults(nodes: &[String], prefix: &str) -> anyhow::Result<Vec<String>> {
    let mut faults = Vec::new();
    let mut children = HashSet::new();
    let mut started: HashMap<String, usize> = HashMap::new();
    for node in nodes {
        let (mut connection, store) = settled_node(node, prefix).await?;
        for keys in sessions(&mut connection, prefix).await? {
            let session = &keys.session;
            if session.contains(baton_core::ids::CHILD_SESSION_SEPARATOR) {
                children.insert(session.clone());
            }
            let status: Option<String> = redis::cmd("HGET")
                .arg(keys.key("state"))
                .arg("status")
                .query_async(&mut connection)
                .await?;
            let ended = matches!(
                status.as_deref(),
                Some("completed" | "failed" | "interrupted")
            );
            let mut opened: HashMap<String, Vec<String>> = HashMap::new();
            let mut closed: HashSet<String> = HashSet::new();
            for (_, chunk) in stream(&store, session).await? {
                let call = chunk["toolCallId"].as_str().unwrap_or_default().to_owned();
                match chunk["type"].as_str() {
                    Some("subagent_start") => {
                        let child = chunk["subSessionId"].as_str().unwrap_or_default();
                        *started.entry(child.to_owned()).or_default() += 1;
                        opened.entry(call).or_default().push(child.to_owned());
                    }
                    Some("subagent_end") => {
                        closed.insert(call);
                    }
                    _ => {}
                }
            }
            for (call, starts) in &opened {
                if starts.len() != 1 {
                    faults.push(format!(
                        "{session}/{call}: {} subagent_start chunks ({})",
                        starts.len(),
                        starts.join(", ")
                    ));
                }
                if ended && !closed.contains(call) {
                    faults.push(format!(
                        "{session}/{call}: the parent ended with its subagent_start unclosed"
                    ));
                }
            }
        }
    }
    for child in &children {
        let count = started.get(child).copied().unwrap_or(0);
        if count != 1 {
            faults.push(format!(
                "child {child}: started by {count} subagent_start chunks"
            ));
        }
    }
    Ok(faults)
}

//! The campaign's client: drives sessions over HTTP as a patient user would (start, follow,
//! answer every awaited call concurrently, resume), retrying what a fault makes fail, and notes
//! every answer the server accepted, every 5xx and every submit's latency.

use baton_client::{Client as _, HttpClient};
use baton_core::{ChunkKind, ErrorCode, message::ToolOutcome, session::ApprovalDecision};
use futures::StreamExt;
use serde_json::{Value, json};
use std::{
    collections::HashMap,
    sync::{
        Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

/// An answer the server accepted: it must be in the session's log exactly once.
#[derive(Debug, Clone)]
pub struct Accepted {
    pub session_id: String,
    pub tool_call_id: String,
    /// The result the log must hold for the call.
    pub result: Value,
    /// When the server's acceptance arrived.
    pub at: Instant,
}

/// What the client saw during a scenario.
#[derive(Default)]
pub struct Tally {
    pub accepted: Mutex<Vec<Accepted>>,
    /// Every session a start answered with.
    pub sessions: Mutex<Vec<String>>,
    /// Answers with a 5xx status (any code).
    pub server_errors: AtomicU64,
    /// Of those, `503 store_unavailable`.
    pub store_unavailable: AtomicU64,
    /// Of those, `503 temporal_unavailable`.
    pub temporal_unavailable: AtomicU64,
    /// Latency of each accepted submit, in ms.
    pub submit_ms: Mutex<Vec<f64>>,
    /// Sessions the client gave up on, with why.
    pub abandoned: Mutex<Vec<String>>,
    /// Failed attempts that were retried.
    pub retries: AtomicU64,
}

impl Tally {
    pub fn accepted(&self) -> Vec<Accepted> {
        lock(&self.accepted).clone()
    }

    pub fn submit_ms(&self) -> Vec<f64> {
        lock(&self.submit_ms).clone()
    }

    pub fn abandoned(&self) -> Vec<String> {
        lock(&self.abandoned).clone()
    }

    fn note_error(&self, error: &baton_client::Error) {
        if let Some(status) = http_status(error)
            && status >= 500
        {
            self.server_errors.fetch_add(1, Ordering::Relaxed);
            match error {
                baton_client::Error::Api(api) if api.code == ErrorCode::StoreUnavailable => {
                    self.store_unavailable.fetch_add(1, Ordering::Relaxed);
                }
                baton_client::Error::Api(api) if api.code == ErrorCode::TemporalUnavailable => {
                    self.temporal_unavailable.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }
        }
    }
}

/// A poisoned lock only means another task panicked; its data is still what it noted.
pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The HTTP status of a failed call, when the server answered.
pub fn http_status(error: &baton_client::Error) -> Option<u16> {
    match error {
        baton_client::Error::Api(api) => Some(api.code.presentation().http_status),
        baton_client::Error::Unexpected { status, .. } => Some(*status),
        _ => None,
    }
}

/// Whether trying the call again may succeed: a lost connection, a 5xx or a retryable refusal.
fn transient(error: &baton_client::Error) -> bool {
    match error {
        baton_client::Error::Api(api) => {
            api.retryable || api.code.presentation().http_status >= 500
        }
        baton_client::Error::Unexpected { status, .. } => *status >= 500,
        baton_client::Error::Transport(_)
        | baton_client::Error::StreamClosed
        | baton_client::Error::StreamLost { .. } => true,
        _ => false,
    }
}

/// Where a follow stopped.
enum Stop {
    Ended,
    Suspended(Vec<String>),
}

/// Drives sessions: started through `start`, followed and answered through `answer` (the same
/// server, or another one behind the same Redis and task queue).
pub struct Driver<'a> {
    pub start: &'a HttpClient,
    pub answer: &'a HttpClient,
    pub tally: &'a Tally,
    /// How long one session may take before the driver gives up on it.
    pub limit: Duration,
}

/// How long a session may take under faults before the client gives up on it.
pub const SESSION_LIMIT: Duration = Duration::from_secs(180);

impl<'a> Driver<'a> {
    /// A driver that starts, follows and answers through one server.
    pub fn new(client: &'a HttpClient, tally: &'a Tally) -> Self {
        Self {
            start: client,
            answer: client,
            tally,
            limit: SESSION_LIMIT,
        }
    }

    /// Runs one session of `agent` to its end; an error says why the driver gave up.
    pub async fn session(&self, agent: &str) -> anyhow::Result<String> {
        let began = Instant::now();
        let started = self
            .retrying(began, || self.start.start(agent, "go"))
            .await?;
        let session = started.session_id;
        lock(&self.tally.sessions).push(session.clone());
        let outcome = self.drive(&session, 0, began).await;
        self.outcome(session, outcome)
    }

    /// Follows a started session to its first suspension: the sequence of its `suspended` chunk
    /// and the calls it awaits (none if it ended instead).
    pub async fn until_suspended(&self, session: &str) -> anyhow::Result<(u64, Vec<String>)> {
        let mut after = 0;
        let stop = self
            .follow(session, &mut after, &mut HashMap::new(), Instant::now())
            .await?;
        Ok(match stop {
            Stop::Ended => (after, Vec::new()),
            Stop::Suspended(calls) => (after, calls),
        })
    }

    /// Resumes a session whose calls someone else answered, then drives it to its end.
    pub async fn finish(&self, session: String, after: u64) -> anyhow::Result<String> {
        let began = Instant::now();
        let outcome = match self.resume(&session, began).await {
            Ok(()) => self.drive(&session, after, began).await,
            Err(error) => Err(error),
        };
        self.outcome(session, outcome)
    }

    fn outcome(&self, session: String, outcome: anyhow::Result<()>) -> anyhow::Result<String> {
        match outcome {
            Ok(()) => Ok(session),
            Err(error) => {
                let why = format!("{session}: {error:#}");
                lock(&self.tally.abandoned).push(why.clone());
                anyhow::bail!(why)
            }
        }
    }

    async fn drive(&self, session: &str, from: u64, began: Instant) -> anyhow::Result<()> {
        let mut after = from;
        let mut approvals = HashMap::new();
        loop {
            match self
                .follow(session, &mut after, &mut approvals, began)
                .await?
            {
                Stop::Ended => return Ok(()),
                Stop::Suspended(calls) => {
                    let answers = calls.iter().map(|call| {
                        self.answer_call(session, call, approvals.get(call).cloned(), began)
                    });
                    for answer in futures::future::join_all(answers).await {
                        answer?;
                    }
                    self.resume(session, began).await?;
                }
            }
        }
    }

    /// Follows the session from `after` to its next suspension or its end, reopening the stream
    /// as often as faults break it.
    async fn follow(
        &self,
        session: &str,
        after: &mut u64,
        approvals: &mut HashMap<String, String>,
        began: Instant,
    ) -> anyhow::Result<Stop> {
        loop {
            anyhow::ensure!(
                began.elapsed() < self.limit,
                "no end or suspension after {:?} (followed to sequence {after})",
                self.limit
            );
            let mut stream = self.answer.follow(session, *after);
            let remaining = self.limit.saturating_sub(began.elapsed());
            let next = tokio::time::timeout(remaining, async {
                while let Some(chunk) = stream.next().await {
                    let chunk = match chunk {
                        Ok(chunk) => chunk,
                        Err(error) => {
                            self.tally.note_error(&error);
                            self.tally.retries.fetch_add(1, Ordering::Relaxed);
                            return None;
                        }
                    };
                    *after = chunk.sequence;
                    match chunk.kind {
                        ChunkKind::ToolApprovalRequest {
                            tool_call_id,
                            approval_id,
                            ..
                        } => {
                            approvals.insert(tool_call_id, approval_id);
                        }
                        ChunkKind::Suspended { tool_call_ids, .. } => {
                            return Some(Stop::Suspended(tool_call_ids));
                        }
                        ChunkKind::End { .. } => return Some(Stop::Ended),
                        _ => {}
                    }
                }
                None
            })
            .await;
            match next {
                Ok(Some(stop)) => return Ok(stop),
                Ok(None) | Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// Answers one awaited call (an approval with edited arguments, so that its result is known;
    /// a client call with a result naming the session and call) until the server takes it.
    async fn answer_call(
        &self,
        session: &str,
        call: &str,
        approval: Option<String>,
        began: Instant,
    ) -> anyhow::Result<()> {
        let (expected, request) = match &approval {
            Some(approval_id) => {
                let to = format!("approved-{session}-{call}");
                let decision = ApprovalDecision {
                    approved: true,
                    reason: None,
                    arguments: Some(json!({"to": to, "amount": 10})),
                };
                (
                    json!(format!("sent 10 to {to}")),
                    baton_core::submit::SubmitRequest::approval(
                        session,
                        call,
                        approval_id,
                        decision,
                    ),
                )
            }
            None => {
                let result = json!(format!("answer-{session}-{call}"));
                (
                    result.clone(),
                    baton_core::submit::SubmitRequest::tool_result(
                        session,
                        call,
                        ToolOutcome::Result(result),
                    ),
                )
            }
        };
        let submitted = Instant::now();
        let answer = self
            .retrying(began, || self.answer.submit_request(&request))
            .await?;
        // `already_completed` after failed attempts means an earlier attempt was stored: it is
        // an accepted answer all the same.
        if answer.status == baton_core::submit::SubmitStatus::Accepted {
            lock(&self.tally.submit_ms).push(submitted.elapsed().as_secs_f64() * 1000.0);
        }
        lock(&self.tally.accepted).push(Accepted {
            session_id: session.to_owned(),
            tool_call_id: call.to_owned(),
            result: expected,
            at: Instant::now(),
        });
        Ok(())
    }

    /// Resumes a suspended session whose calls are answered; a session another entry resumed
    /// already (a deadline, `--resume-on-submit`) is left to follow.
    async fn resume(&self, session: &str, began: Instant) -> anyhow::Result<()> {
        loop {
            match self.answer.resume(session).await {
                Ok(_) => return Ok(()),
                Err(error) => {
                    self.tally.note_error(&error);
                    let status = self.answer.status(session).await;
                    if let Ok(state) = &status
                        && state.status != baton_core::session::Status::SuspendedClientTool
                    {
                        return Ok(());
                    }
                    anyhow::ensure!(
                        transient(&error) || status.is_err(),
                        "resume refused: {error}"
                    );
                    anyhow::ensure!(
                        began.elapsed() < self.limit,
                        "resume still failing: {error}"
                    );
                    self.tally.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    /// Calls `call` until it succeeds or fails for good.
    pub async fn retrying<T, F, Fut>(&self, began: Instant, call: F) -> anyhow::Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, baton_client::Error>>,
    {
        loop {
            match call().await {
                Ok(value) => return Ok(value),
                Err(error) => {
                    self.tally.note_error(&error);
                    anyhow::ensure!(transient(&error), "refused: {error}");
                    anyhow::ensure!(began.elapsed() < self.limit, "still failing: {error}");
                    self.tally.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

/// The p50 and p99 of `samples` (ms), or none without samples.
pub fn percentiles(mut samples: Vec<f64>) -> Option<(f64, f64)> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_by(f64::total_cmp);
    let at = |p: f64| samples[((samples.len() - 1) as f64 * p).round() as usize];
    Some((at(0.5), at(0.99)))
}

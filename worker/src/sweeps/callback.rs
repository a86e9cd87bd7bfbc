//! The callback sweep: delivers the producer mount's callbacks, and the push notifications of
//! tasks begun over A2A (the task at each turn end, to the URL its client set). A session whose start asked for
//! one is in the callback index; each pass reads the due sessions and, for one whose turn has
//! ended (`paused`, or ended) past the turn last delivered, POSTs the turn's
//! [`CallbackBody`], signed with the consumer's token, then records it delivered (one script,
//! the mark only rising). A failed POST is tried again after a back-off doubling from
//! `retry_after` up to `retry_max`; the turn's `max_attempts`-th failure drops the callback (a
//! warning `callback.dropped` and the `baton_callbacks_dropped_total` counter): the consumer's
//! remote-wait sweep still finds the child's end by polling its `status`. Every worker
//! sweeps on its own and the truth is in Redis, so a killed worker's callbacks are delivered by
//! the next pass of any worker; two workers may both deliver one turn (at least once: the body's
//! `sequence` names the turn).

use super::repeat_until;
use baton_core::{
    a2a::{PUSH_TOKEN_HEADER, Task, TaskStatus},
    remote::{CALLBACK_SIGNATURE_HEADER, CallbackBody, Status},
    store::{
        A2aPush, CallbackFailure, RegisteredCallback, SessionAddress, SessionState, Store,
        a2a_task_state,
    },
};
use ring::hmac;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How the callback sweep runs.
#[derive(Debug, Clone)]
pub struct CallbackSweep {
    /// How often a pass runs, and how soon a running session is looked at again.
    pub every: Duration,
    /// How soon a paused session whose turn was delivered is looked at again (a resume through
    /// the mount looks at once; one through the public API is noticed by then).
    pub idle_every: Duration,
    /// How long after a turn's first failed POST it is tried again; each further failure
    /// doubles it, up to `retry_max`.
    pub retry_after: Duration,
    /// The longest wait between two attempts.
    pub retry_max: Duration,
    /// How many failed POSTs of one turn drop the callback.
    pub max_attempts: u32,
    /// Counts the callbacks dropped (the process's `baton_callbacks_dropped_total`), if set.
    pub dropped: Option<prometheus::IntCounter>,
    /// How long one POST may take.
    pub timeout: Duration,
}

impl Default for CallbackSweep {
    fn default() -> Self {
        Self {
            every: Duration::from_secs(1),
            idle_every: Duration::from_secs(30),
            retry_after: DEFAULT_RETRY_AFTER,
            retry_max: DEFAULT_RETRY_MAX,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            dropped: None,
            timeout: Duration::from_secs(10),
        }
    }
}

/// The first back-off after a failed POST.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);
/// The longest back-off between two POSTs of a turn.
pub const DEFAULT_RETRY_MAX: Duration = Duration::from_secs(300);
/// The failed POSTs of one turn that drop its callback: 5 s doubling to 5 min, about 75 min.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 20;

impl CallbackSweep {
    /// The wait after a turn's `attempts`-th failed POST: `retry_after` doubled per earlier
    /// failure, at most `retry_max`.
    pub fn back_off(&self, attempts: u32) -> Duration {
        let doublings = attempts.saturating_sub(1).min(31);
        self.retry_after
            .saturating_mul(1u32 << doublings)
            .min(self.retry_max.max(self.retry_after))
    }
}

/// Most sessions read from the index at once; a pass reads batches until none is due.
const BATCH: usize = 256;

/// Most POSTs one pass has in flight: a slow consumer does not hold up the others.
const IN_FLIGHT: usize = 16;

/// Sweeps every `sweep.every` until `shutdown`.
pub async fn sweep_callbacks(store: Store, sweep: CallbackSweep, shutdown: CancellationToken) {
    let http = match reqwest::Client::builder().timeout(sweep.timeout).build() {
        Ok(http) => http,
        Err(error) => {
            tracing::error!(%error, "no HTTP client for callbacks: none will be delivered");
            return;
        }
    };
    repeat_until(sweep.every, &shutdown, "callback", || {
        sweep_callbacks_once(&store, &http, &sweep)
    })
    .await;
}

/// One pass: every due session looked at (each is moved to its next time, so a batch is not
/// read twice); answers how many turns were delivered.
pub async fn sweep_callbacks_once(
    store: &Store,
    http: &reqwest::Client,
    sweep: &CallbackSweep,
) -> Result<usize, baton_core::store::Error> {
    use futures::{StreamExt, TryStreamExt};
    let now = now_ms();
    let mut delivered = 0;
    loop {
        let due = store.due_callbacks(now, BATCH).await?;
        let full = due.len() == BATCH;
        let outcomes: Vec<bool> = futures::stream::iter(due)
            .map(|address| look_at(store, http, sweep, address, now))
            .buffer_unordered(IN_FLIGHT)
            .try_collect()
            .await?;
        delivered += outcomes.into_iter().filter(|sent| *sent).count();
        if !full {
            return Ok(delivered);
        }
    }
}

/// Looks at one indexed session: delivers its ended turn if it has one not yet delivered, and
/// moves it to its next time (or out of the index); `true` when a turn was delivered.
async fn look_at(
    store: &Store,
    http: &reqwest::Client,
    sweep: &CallbackSweep,
    address: SessionAddress,
    now: u64,
) -> Result<bool, baton_core::store::Error> {
    // At least a millisecond on, so the pass (due up to `now`) does not read the session again.
    let later = |after: Duration| {
        now.saturating_add(u64::try_from(after.as_millis()).unwrap_or(u64::MAX).max(1))
    };
    let Some(session) = store.session(&address).await? else {
        store.unindex_callback(&address).await?;
        return Ok(false);
    };
    // A mount's callback, else the push configuration of the session's A2A task.
    let target = match store.callback(&address).await? {
        Some(callback) => Target::Mount(callback),
        None => match store.a2a_push(&address).await? {
            Some(push) => Target::A2a(push),
            None => {
                store.unindex_callback(&address).await?;
                return Ok(false);
            }
        },
    };
    let callback = target.callback();
    let status = Status::of(session.status);
    let undelivered = status.ends_a_turn() && session.last_sequence > callback.delivered;
    if undelivered {
        let posted = match &target {
            Target::Mount(callback) => post(http, &session, callback, status).await,
            Target::A2a(push) => push_task(http, &session, push).await,
        };
        if let Err(error) = posted {
            let failure = store
                .callback_failed(&address, session.last_sequence, sweep.max_attempts)
                .await?;
            match failure {
                CallbackFailure::Retry { attempts } => {
                    let wait = sweep.back_off(attempts);
                    tracing::warn!(
                        session_id = %address.session_id,
                        url = %baton_core::escape::bounded(&callback.url),
                        %error,
                        attempts,
                        retry_in_ms = wait.as_millis() as u64,
                        "a callback was not delivered; it is tried again"
                    );
                    store.index_callback(&address, later(wait)).await?;
                }
                CallbackFailure::Dropped => {
                    if let Some(dropped) = &sweep.dropped {
                        dropped.inc();
                    }
                    tracing::warn!(
                        event = "callback.dropped",
                        session_id = %address.session_id,
                        url = %baton_core::escape::bounded(&callback.url),
                        %error,
                        attempts = sweep.max_attempts,
                        "a callback failed its last attempt and is dropped; the consumer reads \
                         the session's status instead"
                    );
                    store.unindex_callback(&address).await?;
                }
            }
            return Ok(false);
        }
        store
            .callback_delivered(&address, session.last_sequence)
            .await?;
    }
    match status {
        // The turn runs: look again soon.
        Status::Running => store.index_callback(&address, later(sweep.every)).await?,
        // Waiting for a person: its next turn starts with a resume.
        Status::Paused => {
            store
                .index_callback(&address, later(sweep.idle_every))
                .await?
        }
        // Ended and delivered: a resume through the mount indexes it again.
        _ => store.unindex_callback(&address).await?,
    }
    Ok(undelivered)
}

/// Where a session's turn ends go.
enum Target {
    /// The mount's start asked for a callback (`CallbackBody`, signed).
    Mount(RegisteredCallback),
    /// An A2A client set a push configuration on the session's current task (the task, with
    /// its token in `X-A2A-Notification-Token`).
    A2a(A2aPush),
}

impl Target {
    fn callback(&self) -> &RegisteredCallback {
        match self {
            Self::Mount(callback) => callback,
            Self::A2a(push) => &push.callback,
        }
    }
}

/// POSTs the A2A task to its push URL: the task's id, context and state (the client reads the
/// rest with `tasks/get`), the token in `X-A2A-Notification-Token`; any answer but a 2xx is a
/// failure.
async fn push_task(
    http: &reqwest::Client,
    session: &SessionState,
    push: &A2aPush,
) -> Result<(), String> {
    let task = Task {
        id: push.task_id.clone(),
        context_id: session.session_id.clone(),
        status: TaskStatus {
            state: a2a_task_state(session),
            message: None,
            timestamp: None,
        },
        history: Vec::new(),
        artifacts: Vec::new(),
        metadata: None,
    };
    let mut body = serde_json::to_value(&task).map_err(|e| e.to_string())?;
    if let Some(fields) = body.as_object_mut() {
        fields.insert("kind".into(), "task".into());
    }
    let mut request = http
        .post(&push.callback.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .json(&body);
    if !push.callback.token.is_empty() {
        request = request.header(PUSH_TOKEN_HEADER, &push.callback.token);
    }
    let response = request.send().await.map_err(|e| e.to_string())?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(format!("the A2A client answered {}", response.status()))
    }
}

/// POSTs the turn's body, signed; any answer but a 2xx is a failure.
async fn post(
    http: &reqwest::Client,
    session: &SessionState,
    callback: &RegisteredCallback,
    status: Status,
) -> Result<(), String> {
    let body = CallbackBody {
        session_id: session.session_id.clone(),
        agent_type: session.agent_type.clone(),
        stream_id: session.stream_id.clone(),
        run_id: session.run_id.clone(),
        sequence: session.last_sequence,
        status,
        output: session.output.clone(),
        error: session.error.clone(),
    };
    let bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
    let response = http
        .post(&callback.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(
            CALLBACK_SIGNATURE_HEADER,
            signature(&callback.token, &bytes),
        )
        .body(bytes)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(format!("the consumer answered {}", response.status()))
    }
}

/// `sha256=<hex of HMAC-SHA256(token, body)>`.
pub fn signature(token: &str, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, token.as_bytes());
    let tag = hmac::sign(&key, body);
    let hex: String = tag
        .as_ref()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    format!("sha256={hex}")
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_back_off_doubles_from_the_first_wait_up_to_its_cap() {
        let sweep = CallbackSweep::default();
        let waits: Vec<u64> = [1, 2, 3, 6, 7, 8, 20, u32::MAX]
            .into_iter()
            .map(|attempts| sweep.back_off(attempts).as_secs())
            .collect();
        assert_eq!(waits, [5, 10, 20, 160, 300, 300, 300, 300]);
        let total: u64 = (1..DEFAULT_MAX_ATTEMPTS)
            .map(|attempts| sweep.back_off(attempts).as_secs())
            .sum();
        assert_eq!(total, 315 + 13 * 300, "the attempts span about 70 minutes");
    }

    #[test]
    fn a_signature_is_the_hmac_of_the_body_under_the_token() {
        let signed = signature("a-token-of-16-bytes", b"{}");
        assert!(signed.starts_with("sha256="));
        assert_eq!(signed.len(), "sha256=".len() + 64);
        assert_eq!(signed, signature("a-token-of-16-bytes", b"{}"));
        assert_ne!(signed, signature("another-token-16b", b"{}"));
        assert_ne!(signed, signature("a-token-of-16-bytes", b"{ }"));
    }
}

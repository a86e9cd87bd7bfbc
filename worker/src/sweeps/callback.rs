//! The callback sweep: delivers the producer mount's callbacks. A session whose start asked for
//! one is in the callback index; each pass reads the due sessions and, for one whose turn has
//! ended (`paused`, or ended) past the turn last delivered, POSTs the turn's
//! [`CallbackBody`], signed with the consumer's token, then records it delivered (one script,
//! the mark only rising). A failed POST is tried again a retry interval later. Every worker
//! sweeps on its own and the truth is in Redis, so a killed worker's callbacks are delivered by
//! the next pass of any worker; two workers may both deliver one turn (at least once: the body's
//! `sequence` names the turn).

use super::repeat_until;
use baton_core::{
    remote::{CALLBACK_SIGNATURE_HEADER, CallbackBody, Status},
    store::{RegisteredCallback, SessionState, Store},
};
use ring::hmac;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How the callback sweep runs.
#[derive(Debug, Clone)]
pub struct CallbackSweep {
    /// How often a pass runs, and how soon a running session is looked at again.
    pub every: Duration,
    /// How long after a failed POST it is tried again.
    pub retry_after: Duration,
    /// How long one POST may take.
    pub timeout: Duration,
}

impl Default for CallbackSweep {
    fn default() -> Self {
        Self {
            every: Duration::from_secs(1),
            retry_after: Duration::from_secs(5),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Most sessions one pass looks at.
const PASS_LIMIT: usize = 256;

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

/// One pass: the turns delivered.
pub async fn sweep_callbacks_once(
    store: &Store,
    http: &reqwest::Client,
    sweep: &CallbackSweep,
) -> Result<usize, baton_core::store::Error> {
    let now = now_ms();
    let mut delivered = 0;
    for address in store.due_callbacks(now, PASS_LIMIT).await? {
        let (Some(session), Some(callback)) = (
            store.session(&address).await?,
            store.callback(&address).await?,
        ) else {
            store.unindex_callback(&address).await?;
            continue;
        };
        let status = Status::of(session.status);
        let later = |after: Duration| now + u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        if !status.ends_a_turn() || session.last_sequence <= callback.delivered {
            if status.ends_a_turn() && status != Status::Paused {
                // Ended and delivered: a mount's resume indexes it again.
                store.unindex_callback(&address).await?;
            } else {
                store.index_callback(&address, later(sweep.every)).await?;
            }
            continue;
        }
        match post(http, &session, &callback, status).await {
            Ok(()) => {
                store
                    .callback_delivered(&address, session.last_sequence)
                    .await?;
                delivered += 1;
                if status == Status::Paused {
                    store.index_callback(&address, later(sweep.every)).await?;
                } else {
                    store.unindex_callback(&address).await?;
                }
            }
            Err(error) => {
                tracing::warn!(
                    session_id = %address.session_id,
                    url = %callback.url,
                    %error,
                    "a callback was not delivered; it is tried again"
                );
                store
                    .index_callback(&address, later(sweep.retry_after))
                    .await?;
            }
        }
    }
    Ok(delivered)
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
    fn a_signature_is_the_hmac_of_the_body_under_the_token() {
        let signed = signature("a-token-of-16-bytes", b"{}");
        assert!(signed.starts_with("sha256="));
        assert_eq!(signed.len(), "sha256=".len() + 64);
        assert_eq!(signed, signature("a-token-of-16-bytes", b"{}"));
        assert_ne!(signed, signature("another-token-16b", b"{}"));
        assert_ne!(signed, signature("a-token-of-16-bytes", b"{ }"));
    }
}

//! A remote sub-agent's declaration: the agent served by another service over the remote-agent
//! protocol (`{url}/{agentType}/(start|sse|status|snapshot|usage|interrupt|abort)`), and how the
//! consumer talks to it (credentials, retries, deadlines, the fold's cap). Plain data: the
//! activities (`activities/src/subagent/remote.rs`) do the I/O; secrets are given by the
//! binary (an agents file names the environment variable, the binary reads it).

use crate::ids::is_valid_name;
use std::time::Duration;

/// The default cap on the child's serialized state routed through `after_sub_agent`.
pub const DEFAULT_MAX_FOLD_STATE_BYTES: usize = 262_144;

/// How a consumer reaches and follows one remote agent type.
#[derive(Clone, PartialEq, Eq)]
pub struct RemoteAgent {
    /// The producer mount's base URL, e.g. `http://127.0.0.1:8080/agents` (no trailing `/`).
    url: String,
    /// The agent type on the producer (the route's `{agentType}`).
    agent_type: String,
    /// Sent with every request (the bearer among them, as `authorization`); values never shown.
    headers: Vec<(String, String)>,
    /// Retries of a request that failed on the network or with a retryable status (5xx, 429).
    pub max_retries: u32,
    /// The wait before the first retry; each later wait doubles.
    pub retry_base_delay: Duration,
    /// Longest wait for one read (a response, or the next bytes of the stream).
    pub read_timeout: Duration,
    /// Longest a call may take from its start to the child's end (per attempt of the activity).
    pub timeout: Duration,
    /// Reconnections of the child's stream after it broke without an `end`.
    pub stream_retries: u32,
    /// The child's state is folded through `after_sub_agent` only when its JSON is this small.
    pub max_fold_state_bytes: usize,
    /// Whether a child its producer lost (`running`, nothing executing) is resumed
    /// (`resume {mode: continue}`) instead of failing the call with `producer_dead`.
    pub resume_dead_producer: bool,
    /// How many attaches in a row finding the child lost make it dead.
    pub dead_after_attaches: u32,
    /// How long a follower reads a child that has not ended its turn before it lets go: the
    /// caller then waits on the child holding nothing (no activity, no connection) until the
    /// consumer's remote-call sweep finds the child's turn ended.
    pub follow_window: Duration,
}

impl std::fmt::Debug for RemoteAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("RemoteAgent")
            .field("url", &self.url)
            .field("agent_type", &self.agent_type)
            .field("headers", &headers)
            .field("max_retries", &self.max_retries)
            .field("timeout", &self.timeout)
            .field("follow_window", &self.follow_window)
            .finish_non_exhaustive()
    }
}

impl RemoteAgent {
    /// The agent type `agent_type` of the mount at `url`, with the defaults: 3 retries from
    /// 200 ms, 30 s per read, 10 minutes per call, 3 stream retries, a 256 KiB fold cap, dead
    /// after 3 attaches, no resume of a dead producer, a follow window of a minute.
    pub fn new(url: impl Into<String>, agent_type: impl Into<String>) -> Self {
        Self {
            url: url.into().trim_end_matches('/').to_owned(),
            agent_type: agent_type.into(),
            headers: Vec::new(),
            max_retries: 3,
            retry_base_delay: Duration::from_millis(200),
            read_timeout: Duration::from_secs(30),
            timeout: Duration::from_secs(600),
            stream_retries: 3,
            max_fold_state_bytes: DEFAULT_MAX_FOLD_STATE_BYTES,
            resume_dead_producer: false,
            dead_after_attaches: 3,
            follow_window: Duration::from_secs(60),
        }
    }

    /// Sends `authorization: Bearer <token>`.
    pub fn bearer(self, token: impl AsRef<str>) -> Self {
        let value = format!("Bearer {}", token.as_ref());
        self.header("authorization", value)
    }

    /// Sends the header `name: value` with every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers
            .push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn agent_type(&self) -> &str {
        &self.agent_type
    }

    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// Refuses a declaration no call could use, with the reason.
    pub fn check(&self) -> Result<(), String> {
        check_url("url", &self.url)?;
        if !is_valid_name(&self.agent_type) {
            return Err(format!(
                "agent_type {:?} is not a valid agent type",
                self.agent_type
            ));
        }
        check_headers(&self.headers)?;
        let zero = |what: &str| Err(format!("{what} must be more than 0"));
        if self.read_timeout.is_zero() {
            return zero("read_timeout");
        }
        if self.timeout.is_zero() {
            return zero("timeout");
        }
        if self.dead_after_attaches == 0 {
            return zero("dead_after_attaches");
        }
        if self.follow_window.is_zero() {
            return zero("follow_window");
        }
        Ok(())
    }
}

/// Refuses `url` (the declaration's field `what`) unless it is an http(s) URL without spaces.
pub(super) fn check_url(what: &str, url: &str) -> Result<(), String> {
    let web = url.starts_with("http://") || url.starts_with("https://");
    if !web || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "{what} {url:?} must be an http:// or https:// URL without spaces"
        ));
    }
    Ok(())
}

/// Refuses a header no request could carry.
pub(super) fn check_headers(headers: &[(String, String)]) -> Result<(), String> {
    for (name, value) in headers {
        let token = |c: char| c.is_ascii_alphanumeric() || "-_".contains(c);
        if name.is_empty() || !name.chars().all(token) {
            return Err(format!("header name {name:?} is not a header name"));
        }
        if value.is_empty() || value.chars().any(|c| c.is_control()) {
            return Err(format!(
                "the value of header {name:?} is empty or has control characters"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_is_checked_and_never_shows_its_secrets() {
        let remote = RemoteAgent::new("http://127.0.0.1:9/agents/", "planner").bearer("s3cret");
        assert_eq!(remote.url(), "http://127.0.0.1:9/agents");
        assert_eq!(
            remote.headers(),
            &[("authorization".to_owned(), "Bearer s3cret".to_owned())]
        );
        assert!(remote.check().is_ok());
        assert!(!format!("{remote:?}").contains("s3cret"));
        assert_eq!(remote.max_fold_state_bytes, 262_144);
        for bad in [
            RemoteAgent::new("ftp://x", "planner"),
            RemoteAgent::new("http://a b", "planner"),
            RemoteAgent::new("http://x", "no__pe"),
            RemoteAgent::new("http://x", "p").header("bad name", "v"),
            RemoteAgent::new("http://x", "p").header("x-tenant", ""),
            RemoteAgent {
                timeout: Duration::ZERO,
                ..RemoteAgent::new("http://x", "p")
            },
            RemoteAgent {
                dead_after_attaches: 0,
                ..RemoteAgent::new("http://x", "p")
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }
}

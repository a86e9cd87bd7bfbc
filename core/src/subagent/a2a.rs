//! An A2A sub-agent's declaration: an agent of any vendor served over Agent2Agent (v0.3,
//! JSON-RPC), reached through its agent card's URL, and how the consumer talks to it
//! (credentials, retries, deadlines, how often a task is polled). Plain data: the activities
//! (`activities/src/subagent/a2a.rs`) do the I/O, through the client of `baton_remote::a2a`;
//! secrets are given by the binary (an agents file names the environment variable).

use std::time::Duration;

/// How a consumer reaches and follows one A2A agent.
#[derive(Clone, PartialEq, Eq)]
pub struct A2aAgent {
    /// The agent card's URL, e.g. `https://agents.example.com/.well-known/agent-card.json`;
    /// the JSON-RPC endpoint is the card's `url`.
    card_url: String,
    /// Sent with every request (the bearer among them, as `authorization`); values never shown.
    headers: Vec<(String, String)>,
    /// Retries of a request that failed on the network or with a retryable status (5xx, 429).
    pub max_retries: u32,
    /// The wait before the first retry; each later wait doubles.
    pub retry_base_delay: Duration,
    /// Longest wait for one read (a response, or the next bytes of a stream).
    pub read_timeout: Duration,
    /// Longest a call may take from its start to the task's end or its question (per attempt).
    pub timeout: Duration,
    /// How often a task is read (`tasks/get`) when the agent does not stream, or its stream
    /// broke.
    pub poll_interval: Duration,
    /// How long a follower reads a task that is still working before it lets go: the caller
    /// then waits on it holding nothing (no activity, no connection) until the consumer's
    /// remote-wait sweep finds it stopped working.
    pub follow_window: Duration,
}

impl std::fmt::Debug for A2aAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("A2aAgent")
            .field("card_url", &self.card_url)
            .field("headers", &headers)
            .field("max_retries", &self.max_retries)
            .field("timeout", &self.timeout)
            .field("poll_interval", &self.poll_interval)
            .finish_non_exhaustive()
    }
}

impl A2aAgent {
    /// The agent whose card is at `card_url`, with the defaults: 3 retries from 200 ms, 30 s per
    /// read, 10 minutes per call, a poll every second, a follow window of a minute.
    pub fn new(card_url: impl Into<String>) -> Self {
        Self {
            card_url: card_url.into(),
            headers: Vec::new(),
            max_retries: 3,
            retry_base_delay: Duration::from_millis(200),
            read_timeout: Duration::from_secs(30),
            timeout: Duration::from_secs(600),
            poll_interval: Duration::from_secs(1),
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

    pub fn card_url(&self) -> &str {
        &self.card_url
    }

    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// Refuses a declaration no call could use, with the reason.
    pub fn check(&self) -> Result<(), String> {
        super::remote::check_url("card_url", &self.card_url)?;
        super::remote::check_headers(&self.headers)?;
        let zero = |what: &str| Err(format!("{what} must be more than 0"));
        if self.read_timeout.is_zero() {
            return zero("read_timeout");
        }
        if self.timeout.is_zero() {
            return zero("timeout");
        }
        if self.poll_interval.is_zero() {
            return zero("poll_interval");
        }
        if self.follow_window.is_zero() {
            return zero("follow_window");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_is_checked_and_never_shows_its_secrets() {
        let agent =
            A2aAgent::new("http://127.0.0.1:9/.well-known/agent-card.json").bearer("s3cret");
        assert!(agent.check().is_ok());
        assert!(!format!("{agent:?}").contains("s3cret"));
        for bad in [
            A2aAgent::new("ftp://x/card"),
            A2aAgent::new("http://a b/card"),
            A2aAgent::new("http://x").header("bad name", "v"),
            A2aAgent {
                poll_interval: Duration::ZERO,
                ..A2aAgent::new("http://x")
            },
            A2aAgent {
                timeout: Duration::ZERO,
                ..A2aAgent::new("http://x")
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }
}

//! The checks of an agents file's remote and A2A agents: what a good declaration gives, and the
//! line and reason of a bad one.

use super::tests::catalogue;
use super::*;
use crate::{Model, subagent::SubAgentTransport};
use std::{sync::Arc, time::Duration};

/// Knows one secret, `TOKEN`, as a binary's environment would.
struct Secrets;

impl ModelBuilder for Secrets {
    fn build(&self, config: &ModelConfig) -> Result<Arc<dyn Model>, String> {
        ScriptedOnly.build(config)
    }

    fn secret(&self, name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "t0ken".to_owned())
    }
}

const REMOTE: &str = r#"
[[agent]]
name = "writer"

[agent.model]
kind = "scripted"
turns = [{ text = "ok" }]

[[agent.remote_agent]]
name = "research"
description = "Delegates research."
url = "http://127.0.0.1:9/agents/"
agent_type = "researcher"
bearer_env = "TOKEN"
headers = { x-tenant = "t1" }
output_schema = { type = "object" }
timeout_secs = 5
stream_retries = 1
max_fold_state_bytes = 1024
resume_dead_producer = true
"#;

#[test]
fn a_remote_agent_is_declared_with_its_transport_and_a_bad_one_is_refused_with_its_line() {
    let agents = agents_from_toml_with(REMOTE, &catalogue(), &Secrets).unwrap();
    let research = agents[0].sub_agent("research").unwrap();
    assert_eq!(research.transport(), SubAgentTransport::Remote);
    assert_eq!(research.agent_type(), "researcher");
    let remote = research.remote_agent().unwrap();
    assert_eq!(remote.url(), "http://127.0.0.1:9/agents");
    assert_eq!(
        remote.headers(),
        &[
            ("authorization".to_owned(), "Bearer t0ken".to_owned()),
            ("x-tenant".to_owned(), "t1".to_owned())
        ]
    );
    assert_eq!(remote.timeout, Duration::from_secs(5));
    assert_eq!(remote.stream_retries, 1);
    assert_eq!(remote.max_fold_state_bytes, 1024);
    assert!(remote.resume_dead_producer);
    assert_eq!(remote.max_retries, 3, "a default");
    // A remote agent type is another service's: the registry does not need it.
    assert!(crate::AgentRegistry::new(agents).is_ok());

    let missing = agents_from_toml_with(REMOTE, &catalogue(), &ScriptedOnly).unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("TOKEN (bearer_env) is not set"),
        "{missing}"
    );
    let edits = [
        ("http://127.0.0.1:9", "ftp://x", "must be an http://"),
        ("name = \"research\"", "name = \"subagent__x\"", "reserves"),
        (
            "timeout_secs = 5",
            "timeout_secs = 0",
            "timeout must be more than 0",
        ),
        ("stream_retries = 1", "stream_retry = 1", "unknown field"),
    ];
    refused_with_their_line(REMOTE, &edits, "remote", "[[agent.remote_agent]]");
}

const A2A: &str = r#"
[[agent]]
name = "planner"

[agent.model]
kind = "scripted"
turns = [{ text = "ok" }]

[[agent.a2a_agent]]
name = "travel"
description = "Books trips."
card_url = "http://127.0.0.1:9/.well-known/agent-card.json"
bearer_env = "TOKEN"
headers = { x-tenant = "t1" }
timeout_secs = 5
poll_interval_ms = 250
"#;

#[test]
fn an_a2a_agent_is_declared_by_its_card_and_a_bad_one_is_refused_with_its_line() {
    let agents = agents_from_toml_with(A2A, &catalogue(), &Secrets).unwrap();
    let travel = agents[0].sub_agent("travel").unwrap();
    assert_eq!(travel.transport(), SubAgentTransport::A2a);
    assert!(travel.remote_agent().is_none());
    let agent = travel.a2a_agent().unwrap();
    assert_eq!(
        agent.card_url(),
        "http://127.0.0.1:9/.well-known/agent-card.json"
    );
    assert_eq!(
        agent.headers(),
        &[
            ("authorization".to_owned(), "Bearer t0ken".to_owned()),
            ("x-tenant".to_owned(), "t1".to_owned())
        ]
    );
    assert_eq!(agent.timeout, Duration::from_secs(5));
    assert_eq!(agent.poll_interval, Duration::from_millis(250));
    assert_eq!(agent.max_retries, 3, "a default");
    assert!(crate::AgentRegistry::new(agents).is_ok());

    let missing = agents_from_toml_with(A2A, &catalogue(), &ScriptedOnly).unwrap_err();
    assert!(
        missing.to_string().contains("TOKEN (bearer_env)"),
        "{missing}"
    );
    let edits = [
        ("http://127.0.0.1:9", "ftp://x", "card_url \"ftp://x"),
        ("name = \"travel\"", "name = \"sub__x\"", "sub__x"),
        (
            "poll_interval_ms = 250",
            "poll_interval_ms = 0",
            "poll_interval must be more than 0",
        ),
        ("timeout_secs = 5", "url = \"http://x\"", "unknown field"),
    ];
    refused_with_their_line(A2A, &edits, "a2a", "[[agent.a2a_agent]]");
}

/// Refuses each of `edits` of the good file `file` (from, to, what the refusal says) and a
/// `[[agent.sub_agent]]` of `transport`, which must be declared as a `table` instead, each with
/// its line.
fn refused_with_their_line(file: &str, edits: &[(&str, &str, &str)], transport: &str, table: &str) {
    let mut cases: Vec<(String, &str)> = edits
        .iter()
        .map(|(from, to, reason)| (file.replace(from, to), *reason))
        .collect();
    cases.push((
        format!(
            "[[agent]]\nname = \"a\"\n[agent.model]\nkind = \"scripted\"\nturns = []\n\
             [[agent.sub_agent]]\ntype = \"b\"\ntransport = \"{transport}\"\n"
        ),
        table,
    ));
    for (text, reason) in cases {
        let error = agents_from_toml_with(&text, &catalogue(), &Secrets).unwrap_err();
        assert!(error.line > 0);
        assert!(
            error.to_string().contains(reason),
            "{error} should say {reason:?}"
        );
    }
}

//! `[[agent.a2a_agent]]`: an A2A sub-agent declared in an agents file, built into a [`SubAgent`]
//! with its [`A2aAgent`]. As for a remote agent, the bearer token is never in the file:
//! `bearer_env` names the environment variable, which the binary reads; a variable that is not
//! set (or is empty) refuses the file.

use super::{ModelBuilder, file::A2aAgentEntry};
use crate::{
    subagent::{A2aAgent, SubAgent},
    tool::SchemaError,
};
use std::time::Duration;
use toml::Spanned;

/// The A2A sub-agent an entry declares, or the first problem with the entry and where (a byte
/// offset into the file).
pub(super) fn a2a_sub_agent(
    entry: Spanned<A2aAgentEntry>,
    secrets: &dyn ModelBuilder,
) -> Result<SubAgent, (usize, String)> {
    let at = entry.span().start;
    let entry = entry.into_inner();
    let line = entry.name.span().start;
    let mut agent = A2aAgent::new(&entry.card_url);
    if let Some(variable) = &entry.bearer_env {
        let token = secrets
            .secret(variable)
            .filter(|token| !token.trim().is_empty())
            .ok_or_else(|| {
                (
                    line,
                    format!("the environment variable {variable} (bearer_env) is not set or empty"),
                )
            })?;
        agent = agent.bearer(token);
    }
    for (name, value) in entry.headers {
        agent = agent.header(name, value);
    }
    if let Some(retries) = entry.max_retries {
        agent.max_retries = retries;
    }
    if let Some(ms) = entry.retry_base_delay_ms {
        agent.retry_base_delay = Duration::from_millis(ms);
    }
    if let Some(secs) = entry.read_timeout_secs {
        agent.read_timeout = Duration::from_secs(secs);
    }
    if let Some(secs) = entry.timeout_secs {
        agent.timeout = Duration::from_secs(secs);
    }
    if let Some(ms) = entry.poll_interval_ms {
        agent.poll_interval = Duration::from_millis(ms);
    }
    if let Some(secs) = entry.follow_window_secs {
        agent.follow_window = Duration::from_secs(secs);
    }
    agent.check().map_err(|reason| {
        (
            at,
            format!("a2a_agent {:?}: {reason}", entry.name.get_ref()),
        )
    })?;
    let schema_error = |e: SchemaError| (line, e.to_string());
    let mut sub_agent = SubAgent::a2a(entry.name.get_ref(), &entry.description, agent);
    if let Some(schema) = entry.input_schema {
        sub_agent = sub_agent.input_schema(schema).map_err(schema_error)?;
    }
    if let Some(schema) = entry.output_schema {
        sub_agent = sub_agent.output_schema(schema).map_err(schema_error)?;
    }
    Ok(sub_agent)
}

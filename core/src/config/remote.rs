//! `[[agent.remote_agent]]`: a remote sub-agent declared in an agents file, built into a
//! [`SubAgent`] with its [`RemoteAgent`] and its folds. The bearer token is never in the file:
//! `bearer_env` names the environment variable, which the binary reads (through
//! [`super::ModelBuilder::secret`]); a variable that is not set refuses the file.

use super::{
    ModelBuilder,
    file::{FoldEntry, RemoteAgentEntry},
    state_tool::Fold,
};
use crate::{
    subagent::{RemoteAgent, SubAgent},
    tool::SchemaError,
};
use std::time::Duration;
use toml::Spanned;

/// The remote sub-agent an entry declares and the folds of its completed calls, or the first
/// problem with the entry and where (a byte offset into the file).
pub(super) fn remote_sub_agent(
    entry: Spanned<RemoteAgentEntry>,
    secrets: &dyn ModelBuilder,
) -> Result<(SubAgent, Vec<Fold>), (usize, String)> {
    let at = entry.span().start;
    let entry = entry.into_inner();
    let line = entry.name.span().start;
    let mut remote = RemoteAgent::new(&entry.url, &entry.agent_type);
    if let Some(variable) = &entry.bearer_env {
        let token = secrets.secret(variable).ok_or_else(|| {
            (
                line,
                format!("the environment variable {variable} (bearer_env) is not set"),
            )
        })?;
        if token.trim().is_empty() {
            return Err((
                line,
                format!("the environment variable {variable} (bearer_env) is empty"),
            ));
        }
        remote = remote.bearer(token);
    }
    for (name, value) in entry.headers {
        remote = remote.header(name, value);
    }
    if let Some(retries) = entry.max_retries {
        remote.max_retries = retries;
    }
    if let Some(ms) = entry.retry_base_delay_ms {
        remote.retry_base_delay = Duration::from_millis(ms);
    }
    if let Some(secs) = entry.read_timeout_secs {
        remote.read_timeout = Duration::from_secs(secs);
    }
    if let Some(secs) = entry.timeout_secs {
        remote.timeout = Duration::from_secs(secs);
    }
    if let Some(retries) = entry.stream_retries {
        remote.stream_retries = retries;
    }
    if let Some(bytes) = entry.max_fold_state_bytes {
        remote.max_fold_state_bytes = bytes;
    }
    if let Some(resume) = entry.resume_dead_producer {
        remote.resume_dead_producer = resume;
    }
    if let Some(attaches) = entry.dead_after_attaches {
        remote.dead_after_attaches = attaches;
    }
    if let Some(secs) = entry.follow_window_secs {
        remote.follow_window = Duration::from_secs(secs);
    }
    remote.check().map_err(|reason| {
        (
            at,
            format!("remote_agent {:?}: {reason}", entry.name.get_ref()),
        )
    })?;
    let mut folds = Vec::new();
    for fold in entry.fold {
        let fold_line = fold.span().start;
        let FoldEntry { into, from } = fold.into_inner();
        let fold = Fold {
            agent_type: remote.agent_type().to_owned(),
            into,
            from,
        };
        folds.push(fold.checked().map_err(|r| (fold_line, r))?);
    }
    let schema_error = |e: SchemaError| (line, e.to_string());
    let mut sub_agent = SubAgent::remote(entry.name.get_ref(), &entry.description, remote);
    if let Some(schema) = entry.input_schema {
        sub_agent = sub_agent.input_schema(schema).map_err(schema_error)?;
    }
    if let Some(schema) = entry.output_schema {
        sub_agent = sub_agent.output_schema(schema).map_err(schema_error)?;
    }
    Ok((sub_agent, folds))
}

//! A producer mount's declaration, below the server's state that holds it: where the
//! remote-agent protocol's routes live, which agent types they serve and at what fidelity (a
//! state and a usage projection, `projection.rs`). The routes themselves are `crate::http::mount`'s.

pub(crate) mod projection;

pub use projection::{StateProjection, UsageProjection};

use std::{collections::BTreeSet, fmt, sync::Arc};

/// The base path of the mount `batond` serves unless configured otherwise.
pub const DEFAULT_BASE_PATH: &str = "/agents";

/// One mount of the protocol's routes: its base path, the agent types it serves (all of the
/// server's unless narrowed) and its fidelity. Built with the required base path first:
/// `Mount::new("/agents").allow(["planner"]).keep_state_fields(["phase"])`.
#[derive(Clone)]
pub struct Mount {
    pub(crate) base_path: String,
    pub(crate) agents: Option<BTreeSet<String>>,
    pub(crate) state_projection: Option<StateProjection>,
    pub(crate) usage_projection: Option<UsageProjection>,
    pub(crate) serves_usage: bool,
}

impl Mount {
    /// A raw mount under `base_path` (e.g. `/agents`) of every agent type the server serves.
    pub fn new(base_path: impl Into<String>) -> Self {
        Self {
            base_path: base_path.into(),
            agents: None,
            state_projection: None,
            usage_projection: None,
            serves_usage: true,
        }
    }

    /// Serves only these agent types (a sub-agent's type too, if consumers read its sessions);
    /// any other is `NOT_FOUND`.
    pub fn allow<I, S>(mut self, agents: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.agents = Some(agents.into_iter().map(Into::into).collect());
        self
    }

    /// Makes this a projected mount: `snapshot` and the `end` chunk give `project(state)`, and
    /// the stream carries no `state_patch` chunk (they would show the raw state).
    pub fn project_state(
        mut self,
        project: impl Fn(&serde_json::Value) -> serde_json::Value + Send + Sync + 'static,
    ) -> Self {
        self.state_projection = Some(Arc::new(project));
        self
    }

    /// A projected mount that keeps these top-level fields of the state and drops the rest:
    /// the projection a configuration file or flag can name.
    pub fn keep_state_fields<I, S>(self, fields: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let fields: BTreeSet<String> = fields.into_iter().map(Into::into).collect();
        self.project_state(move |state| projection::kept_fields(state, &fields))
    }

    /// `usage` and the `end` chunk's `usage` give `project(rollup)` instead of the rollup. It
    /// does not make the mount projected: `state_patch` chunks still pass.
    pub fn project_usage(
        mut self,
        project: impl Fn(&baton_core::usage::UsageRollup) -> serde_json::Value + Send + Sync + 'static,
    ) -> Self {
        self.usage_projection = Some(Arc::new(project));
        self
    }

    /// A mount that does not serve usage: `usage` answers `FEATURE_UNAVAILABLE` and consumers
    /// skip their usage fold.
    pub fn without_usage(mut self) -> Self {
        self.serves_usage = false;
        self
    }

    pub fn base_path(&self) -> &str {
        &self.base_path
    }

    /// Whether the mount suppresses `state_patch` chunks.
    pub fn is_projected(&self) -> bool {
        self.state_projection.is_some()
    }

    /// Whether the mount serves `agent_type` (its allowlist; the registry is checked apart).
    pub(crate) fn allows(&self, agent_type: &str) -> bool {
        self.agents
            .as_ref()
            .is_none_or(|agents| agents.contains(agent_type))
    }

    /// Refuses a base path the router cannot serve: it starts with `/`, does not end with one,
    /// and its segments are plain names.
    pub fn check(&self) -> Result<(), String> {
        let path = &self.base_path;
        let plain = |segment: &str| {
            !segment.is_empty()
                && segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        };
        match path.strip_prefix('/') {
            // The chat routes (`/chat/{id}/…`) have the shape of a mount's.
            Some(rest) if rest == "chat" || rest.starts_with("chat/") => Err(format!(
                "mount base path {path:?} is taken by the chat routes"
            )),
            Some(rest) if rest.split('/').all(plain) => Ok(()),
            _ => Err(format!(
                "mount base path {path:?} must be /name or /name/name…, without a trailing /"
            )),
        }
    }
}

impl fmt::Debug for Mount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mount")
            .field("base_path", &self.base_path)
            .field("agents", &self.agents)
            .field("projected", &self.is_projected())
            .field("usage_projected", &self.usage_projection.is_some())
            .field("serves_usage", &self.serves_usage)
            .finish()
    }
}

/// Refuses mounts the router cannot serve together: a bad base path, or two on one path.
pub fn check_mounts(mounts: &[Mount]) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for mount in mounts {
        mount.check()?;
        if !seen.insert(mount.base_path.as_str()) {
            return Err(format!("two mounts on {:?}", mount.base_path));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_paths_are_checked_and_allowlists_narrow() {
        assert!(Mount::new("/agents").check().is_ok());
        assert!(Mount::new("/internal/agents").check().is_ok());
        for bad in [
            "", "/", "agents", "/agents/", "/a//b", "/{x}", "/a b", "/chat",
        ] {
            assert!(Mount::new(bad).check().is_err(), "{bad:?}");
        }
        let twice = [Mount::new("/agents"), Mount::new("/agents")];
        assert!(check_mounts(&twice).is_err());
        let narrowed = Mount::new("/agents").allow(["planner"]);
        assert!(narrowed.allows("planner") && !narrowed.allows("other"));
        assert!(Mount::new("/agents").allows("anything"));
        assert!(!Mount::new("/a").is_projected());
        assert!(Mount::new("/a").keep_state_fields(["x"]).is_projected());
        assert!(
            !Mount::new("/a")
                .project_usage(|_| serde_json::json!({}))
                .is_projected()
        );
    }
}

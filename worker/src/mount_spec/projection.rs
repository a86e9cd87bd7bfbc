//! What a mount's fidelity changes: the state it shows (`snapshot`, the `end` chunk's `state`),
//! the usage it shows (`usage`, the `end` chunk's `usage`), and which chunks its stream passes.
//! A projected mount passes every chunk but `state_patch`, each with its sequence unchanged, so
//! a `fromSequence` cursor means the same on every mount.

use super::Mount;
use baton_core::{ChunkKind, StreamChunk, usage::UsageRollup};
use serde_json::Value;
use std::{collections::BTreeSet, sync::Arc};

/// A pure map of a session's full custom state to what a projected mount shows.
pub type StateProjection = Arc<dyn Fn(&Value) -> Value + Send + Sync>;

/// A map of a usage rollup to what a mount shows (e.g. billing units).
pub type UsageProjection = Arc<dyn Fn(&UsageRollup) -> Value + Send + Sync>;

/// The state with only `fields` of its top level (a state that is not an object shows `{}`).
pub(super) fn kept_fields(state: &Value, fields: &BTreeSet<String>) -> Value {
    let kept = state
        .as_object()
        .map(|object| {
            object
                .iter()
                .filter(|(name, _)| fields.contains(*name))
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect()
        })
        .unwrap_or_default();
    Value::Object(kept)
}

impl Mount {
    /// The state as this mount shows it.
    pub(crate) fn shown_state(&self, state: Value) -> Value {
        match &self.state_projection {
            Some(project) => project(&state),
            None => state,
        }
    }

    /// The rollup as this mount shows it.
    pub(crate) fn shown_usage(&self, rollup: &UsageRollup) -> Value {
        match &self.usage_projection {
            Some(project) => project(rollup),
            None => serde_json::to_value(rollup).unwrap_or(Value::Null),
        }
    }

    /// A chunk as this mount's stream carries it: `None` for a `state_patch` on a projected
    /// mount; an `end` chunk with its state and usage shown; any other chunk as stored.
    pub(crate) fn shown_chunk(&self, chunk: &StreamChunk) -> Option<Value> {
        if self.is_projected() && matches!(chunk.kind, ChunkKind::StatePatch { .. }) {
            return None;
        }
        let mut json = serde_json::to_value(chunk).ok()?;
        if let ChunkKind::End { usage, state, .. } = &chunk.kind
            && let Some(fields) = json.as_object_mut()
        {
            fields.insert("usage".into(), self.shown_usage(usage));
            if let Some(state) = state {
                fields.insert("state".into(), self.shown_state(state.clone()));
            }
        }
        Some(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::chunk::{ChunkHeader, EndStatus};
    use serde_json::json;

    fn chunk(sequence: u64, kind: ChunkKind) -> StreamChunk {
        StreamChunk {
            sequence,
            header: ChunkHeader {
                stream_id: "st".into(),
                session_id: "s".into(),
                agent_id: "s".into(),
                run_id: "r".into(),
                timestamp: 1,
            },
            kind,
            remote_source: None,
        }
    }

    #[test]
    fn a_projected_mount_drops_patches_and_shows_the_end_projected() {
        let patch = chunk(
            3,
            ChunkKind::StatePatch {
                step: 1,
                patch: serde_json::from_value(
                    json!([{"op": "add", "path": "/secret", "value": 1}]),
                )
                .unwrap(),
            },
        );
        let end = chunk(
            4,
            ChunkKind::End {
                status: EndStatus::Completed,
                output: Some("done".into()),
                error: None,
                usage: UsageRollup::default(),
                state: Some(json!({"phase": "done", "secret": 1})),
            },
        );
        let text = chunk(
            2,
            ChunkKind::TextDelta {
                step: 1,
                delta: "hi".into(),
            },
        );
        let raw = Mount::new("/agents");
        assert_eq!(raw.shown_chunk(&patch).unwrap()["sequence"], 3);
        assert_eq!(raw.shown_chunk(&end).unwrap()["state"]["secret"], 1);
        let projected = Mount::new("/public")
            .keep_state_fields(["phase"])
            .project_usage(|rollup| json!({"units": rollup.tokens.output_tokens}));
        assert_eq!(projected.shown_chunk(&patch), None);
        let shown = projected.shown_chunk(&end).unwrap();
        assert_eq!(shown["state"], json!({"phase": "done"}));
        assert_eq!(shown["usage"], json!({"units": 0}));
        assert_eq!(shown["sequence"], 4);
        assert_eq!(shown["output"], "done");
        assert_eq!(
            projected.shown_chunk(&text),
            Some(serde_json::to_value(&text).unwrap())
        );
        assert_eq!(kept_fields(&json!([1]), &BTreeSet::new()), json!({}));
    }
}

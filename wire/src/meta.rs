//! A session's metadata: who it is for (`userId`), a short list of `tags`, and a small JSON
//! object of the caller's (`metadata`). Taken by a start, inherited by children, returned by
//! status and snapshot. [`SessionMeta::check`] holds the caps every entry point applies before it
//! writes anything.

use crate::{ApiError, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Longest `userId`, in bytes.
pub const MAX_USER_ID_BYTES: usize = 256;
/// Most tags a session carries.
pub const MAX_TAGS: usize = 16;
/// Longest tag, in bytes.
pub const MAX_TAG_BYTES: usize = 64;
/// Largest `metadata` object, in bytes of its compact JSON.
pub const MAX_METADATA_BYTES: usize = 8 * 1024;

/// The metadata of a session, as a start takes it and status returns it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionMeta {
    /// The end user the session is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// Short labels to search by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// A small JSON object of the caller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl SessionMeta {
    /// No user, tags or metadata.
    pub fn is_empty(&self) -> bool {
        self.user_id.is_none() && self.tags.is_empty() && self.metadata.is_none()
    }

    /// Refuses metadata over its caps, or with an empty user id or tag, as a `validation_error`
    /// naming the field and the cap (the caller's text is never echoed).
    pub fn check(&self) -> Result<(), ApiError> {
        let refuse = |message: String| Err(ApiError::new(ErrorCode::ValidationError, message));
        if let Some(user) = &self.user_id {
            if user.is_empty() || user.len() > MAX_USER_ID_BYTES {
                return refuse(format!("userId must be 1 to {MAX_USER_ID_BYTES} bytes"));
            }
            if user.chars().any(char::is_control) {
                return refuse("userId may not hold control characters".to_owned());
            }
        }
        if self.tags.len() > MAX_TAGS {
            return refuse(format!("a session takes at most {MAX_TAGS} tags"));
        }
        for tag in &self.tags {
            if tag.is_empty() || tag.len() > MAX_TAG_BYTES || tag.chars().any(char::is_control) {
                return refuse(format!(
                    "each tag must be 1 to {MAX_TAG_BYTES} bytes with no control characters"
                ));
            }
        }
        if let Some(metadata) = &self.metadata {
            let size = serde_json::to_vec(metadata).map_or(usize::MAX, |json| json.len());
            if size > MAX_METADATA_BYTES {
                return refuse(format!(
                    "metadata is {size} bytes of JSON; the cap is {MAX_METADATA_BYTES}"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_metadata_serialises_to_nothing() {
        assert_eq!(
            serde_json::to_value(SessionMeta::default()).unwrap(),
            json!({})
        );
        assert!(SessionMeta::default().is_empty());
    }

    #[test]
    fn the_wire_names_are_camel_case() {
        let meta: SessionMeta = serde_json::from_value(json!({
            "userId": "u-1", "tags": ["vip"], "metadata": {"plan": "pro"}
        }))
        .unwrap();
        assert_eq!(meta.user_id.as_deref(), Some("u-1"));
        assert_eq!(meta.tags, ["vip"]);
        assert_eq!(meta.metadata.unwrap()["plan"], "pro");
    }

    #[test]
    fn caps_refuse_without_echoing() {
        let long = "x".repeat(MAX_USER_ID_BYTES + 1);
        let cases = [
            SessionMeta {
                user_id: Some(String::new()),
                ..SessionMeta::default()
            },
            SessionMeta {
                user_id: Some(long.clone()),
                ..SessionMeta::default()
            },
            SessionMeta {
                tags: vec!["t".into(); MAX_TAGS + 1],
                ..SessionMeta::default()
            },
            SessionMeta {
                tags: vec!["a\u{1b}b".into()],
                ..SessionMeta::default()
            },
            SessionMeta {
                metadata: Some(Map::from_iter([("k".to_owned(), json!(long.repeat(40)))])),
                ..SessionMeta::default()
            },
        ];
        for meta in cases {
            let error = meta.check().unwrap_err();
            assert_eq!(error.code, ErrorCode::ValidationError);
            assert!(!error.error.contains(&long), "{}", error.error);
        }
        let fine = SessionMeta {
            user_id: Some("user-42".into()),
            tags: vec!["support".into(); MAX_TAGS],
            metadata: Some(Map::from_iter([("plan".to_owned(), json!("pro"))])),
        };
        fine.check().unwrap();
    }
}

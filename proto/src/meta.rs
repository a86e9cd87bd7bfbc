//! Conversions of a session's metadata (`SessionMeta`) to and from its wire message.

use crate::{convert::Error, v1};
use baton_wire::SessionMeta;

impl From<SessionMeta> for v1::SessionMeta {
    fn from(meta: SessionMeta) -> Self {
        Self {
            user_id: meta.user_id,
            tags: meta.tags,
            metadata_json: meta
                .metadata
                .map(|map| serde_json::to_string(&map).expect("a JSON object serializes")),
        }
    }
}

impl TryFrom<v1::SessionMeta> for SessionMeta {
    type Error = Error;

    fn try_from(meta: v1::SessionMeta) -> Result<Self, Error> {
        Ok(Self {
            user_id: meta.user_id,
            tags: meta.tags,
            metadata: meta
                .metadata_json
                .map(|json| serde_json::from_str(&json).map_err(Error::MetadataJson))
                .transpose()?,
        })
    }
}

//! The types a Baton client shares with the server: request and answer bodies, stream chunks,
//! error codes and the error body, usage, ids and the SSE framing. No Redis, Temporal or JSON
//! Schema: the `client` and `proto` crates build on this alone.
//!
//! Every enum that has a string form takes it from one place, its serde attributes, with
//! `strum` deriving the same snake_case names for `as_str`/`FromStr` (tests check they agree).

pub mod a2a;
pub mod api;
pub mod chunk;
pub mod error;
pub mod escape;
pub mod fork;
pub mod ids;
pub mod message;
pub mod meta;
pub mod refusal;
pub mod remote;
pub mod search;
pub mod session;
pub mod sse;
pub mod submit;
pub mod tokens;
pub mod usage;

pub use chunk::{ChunkKind, StreamChunk};
pub use error::{ApiError, ErrorCode};
pub use message::{Message, ToolCall, ToolError, ToolOutcome};
pub use meta::SessionMeta;
pub use refusal::Refusal;
pub use session::{SessionState, Status};
pub use usage::{Usage, UsageRollup};

#[cfg(test)]
mod tests {
    use serde::{Serialize, de::DeserializeOwned};
    use std::{fmt::Debug, str::FromStr};
    use strum::IntoEnumIterator;

    /// serde's name of every variant is strum's, both ways.
    fn one_string_table<T>()
    where
        T: IntoEnumIterator + Serialize + DeserializeOwned + FromStr + Into<&'static str>,
        T: Copy + PartialEq + Debug,
        <T as FromStr>::Err: Debug,
    {
        for value in T::iter() {
            let name: &'static str = value.into();
            assert_eq!(serde_json::to_value(value).unwrap(), name, "{value:?}");
            assert_eq!(name.parse::<T>().unwrap(), value);
            assert_eq!(serde_json::from_value::<T>(name.into()).unwrap(), value);
        }
    }

    #[test]
    fn unit_enums_have_one_string_table() {
        one_string_table::<crate::ErrorCode>();
        one_string_table::<crate::Status>();
        one_string_table::<crate::session::StopKind>();
        one_string_table::<crate::chunk::EndStatus>();
        one_string_table::<crate::api::ResumeMode>();
        one_string_table::<crate::submit::SubmitStatus>();
        one_string_table::<crate::refusal::Payload>();
        one_string_table::<crate::refusal::NotStored>();
        one_string_table::<crate::remote::Status>();
    }
}

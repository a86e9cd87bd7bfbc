//! Data a server tool emits for the chat while it runs (`ToolContext::emit_data`): each item
//! becomes a `tool_data` chunk, written with the call's result (so a retried call writes its data
//! once, and a lost attempt's data never), and a `data-<name>` part in a `useChat` message.

use serde_json::Value;

/// At most this many items a call.
pub const MAX_TOOL_DATA_ITEMS: usize = 64;
/// At most this many bytes of JSON a call, all items together.
pub const MAX_TOOL_DATA_BYTES: usize = 256 * 1024;

/// The names the chat route uses itself: a tool's data may not take them.
const RESERVED: [&str; 7] = [
    "render",
    "resume-rejected",
    "state-patch",
    "step-discarded",
    "subagent",
    "subagent-call",
    "answers",
];

/// One item a tool emitted.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolData {
    /// The part is `data-<name>`.
    pub name: String,
    pub data: Value,
    /// Only `onData` sees it; the message does not keep it.
    pub transient: bool,
}

/// Why an item was refused (nothing of it is kept; the call goes on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataError {
    #[error(
        "data name {0:?} is not 1 to 64 lower-case letters, digits and dashes starting with a letter"
    )]
    BadName(String),
    #[error("data name {0:?} is the chat route's own (and so is any starting with baton)")]
    ReservedName(String),
    #[error(
        "a call emits at most {MAX_TOOL_DATA_ITEMS} data items of {MAX_TOOL_DATA_BYTES} bytes in all"
    )]
    TooMuch,
    #[error("the data is not JSON: {0}")]
    NotJson(String),
}

/// Checks an item's name: `[a-z][a-z0-9-]{0,63}`, not one the chat route uses.
pub fn check_name(name: &str) -> Result<(), DataError> {
    let well_formed = name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !well_formed {
        return Err(DataError::BadName(name.to_owned()));
    }
    if RESERVED.contains(&name) || name.starts_with("baton") {
        return Err(DataError::ReservedName(name.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_simple_and_not_the_chats_own() {
        assert_eq!(check_name("progress"), Ok(()));
        assert_eq!(check_name("weather-2"), Ok(()));
        for bad in ["", "Progress", "2x", "a b", "a_b", &"a".repeat(65)] {
            assert_eq!(check_name(bad), Err(DataError::BadName(bad.to_owned())));
        }
        for reserved in ["render", "subagent-call", "baton-subagent-start"] {
            assert_eq!(
                check_name(reserved),
                Err(DataError::ReservedName(reserved.to_owned()))
            );
        }
    }
}

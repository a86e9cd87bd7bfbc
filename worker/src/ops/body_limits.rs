//! The limits a request body meets whatever its transport: its size against the cap (413,
//! `cause: request_body`) and its JSON nesting (400, `cause: json_depth`). HTTP applies them
//! while it reads the body (`crate::http::body`), gRPC to the JSON text a submit carries.

use baton_core::{ApiError, ErrorCode, Refusal, refusal::Payload, submit::payload_too_large};

/// Deepest JSON nesting a request body may have.
pub const MAX_JSON_DEPTH: usize = 64;

/// Refuses (413, `cause: request_body`) a body of `size` bytes over `cap`.
pub fn checked_body_size(size: usize, cap: usize) -> Result<(), ApiError> {
    if size > cap {
        return Err(body_too_large(size, cap));
    }
    Ok(())
}

/// The refusal (413, `cause: request_body`) of a body of `size` bytes over `cap`.
pub fn body_too_large(size: usize, cap: usize) -> ApiError {
    payload_too_large(Payload::RequestBody, cap, size)
}

/// Refuses (400, `cause: json_depth`) a JSON text nesting deeper than [`MAX_JSON_DEPTH`].
pub fn checked_json_depth(bytes: &[u8]) -> Result<(), ApiError> {
    if json_depth(bytes) > MAX_JSON_DEPTH {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            format!("the body nests JSON deeper than {MAX_JSON_DEPTH} levels"),
        )
        .with(Refusal::JsonTooDeep {
            limit_depth: MAX_JSON_DEPTH as u64,
        }));
    }
    Ok(())
}

/// The deepest nesting of arrays and objects in a JSON text (strings skipped), without parsing.
fn json_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0, false, false);
    for &byte in bytes {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_nesting_outside_strings() {
        assert_eq!(json_depth(br#"{"a":1}"#), 1);
        assert_eq!(json_depth(br#"{"a":[{"b":[]}]}"#), 4);
        assert_eq!(json_depth(br#"{"a":"[[[[{{{{"}"#), 1);
        assert_eq!(json_depth(br#"{"a":"\"[[[["}"#), 1);
        assert_eq!(json_depth(br#"{"a":"\\",[[]]}"#), 3);
        assert_eq!(json_depth(b"42"), 0);
        assert_eq!(json_depth(&[b'['; 100]), 100);
    }

    #[test]
    fn the_size_cap_refuses_only_what_is_over_it() {
        assert!(checked_body_size(10, 10).is_ok());
        let refused = checked_body_size(11, 10).unwrap_err();
        assert_eq!(refused.code, ErrorCode::ValidationPayloadTooLarge);
        assert_eq!(refused.details["cause"], "request_body");
        assert_eq!(refused.details["sizeBytes"], 11);
        let deep = [b'['; MAX_JSON_DEPTH + 1];
        assert_eq!(
            checked_json_depth(&deep).unwrap_err().details["cause"],
            "json_depth"
        );
        assert!(checked_json_depth(&deep[1..]).is_ok());
    }
}

//! What a user message of `useChat` carries besides its text, read and checked before anything
//! is written: its id and `metadata` (kept as sent, bounded) and its `file` parts (images and
//! PDFs inline as base64 `data:` URLs, at most [`MAX_CHAT_FILES`] of them and
//! [`MAX_CHAT_FILE_BYTES`] a message, each filename at most [`MAX_FILENAME_BYTES`]). The log keeps
//! them with the message (`Message::User`'s `chat`), so the model adapters send the files and a
//! reload shows the message as it was sent.

use super::request::malformed;
use baton_core::{
    ApiError,
    message::{FilePart, UserExtras},
    refusal::Payload,
    submit::payload_too_large,
};
use serde_json::Value;

/// The most a user message's files may hold, their `data:` URLs summed, in bytes.
pub const MAX_CHAT_FILE_BYTES: usize = 4 << 20;
/// The most file parts a user message may carry.
pub const MAX_CHAT_FILES: usize = 32;
/// The longest filename a file part may give, in bytes.
pub const MAX_FILENAME_BYTES: usize = 256;
/// The longest client message id kept.
pub(super) const MAX_MESSAGE_ID_BYTES: usize = 256;
/// The most a user message's `metadata` may hold, as JSON, in bytes.
pub(super) const MAX_MESSAGE_METADATA_BYTES: usize = 16 << 10;

/// The media types a file part may have: what the model adapters pass on.
const MEDIA_TYPES: [&str; 5] = [
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
];

/// The id, metadata and files of the user message `message` (whose parts are `parts`).
pub(super) fn user_extras(message: &Value, parts: &[Value]) -> Result<UserExtras, ApiError> {
    let id = bounded_text(message, "id", MAX_MESSAGE_ID_BYTES, "the user message's id")?;
    let metadata = match message.get("metadata") {
        None | Some(Value::Null) => None,
        Some(metadata) => {
            let size = metadata.to_string().len();
            if size > MAX_MESSAGE_METADATA_BYTES {
                return Err(malformed(&format!(
                    "the user message's metadata is {size} bytes of JSON; the limit is \
                     {MAX_MESSAGE_METADATA_BYTES}"
                )));
            }
            Some(metadata.clone())
        }
    };
    let file_parts: Vec<&Value> = parts
        .iter()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("file"))
        .collect();
    if file_parts.len() > MAX_CHAT_FILES {
        return Err(malformed(&format!(
            "the user message has {} file parts; the limit is {MAX_CHAT_FILES}",
            file_parts.len()
        )));
    }
    let files = file_parts
        .into_iter()
        .map(file_part)
        .collect::<Result<Vec<_>, _>>()?;
    let size: usize = files.iter().map(|f| f.url.len()).sum();
    if size > MAX_CHAT_FILE_BYTES {
        // Over a size cap: 413 with the cap and the size, as any payload over its limit; the
        // request as sent can never succeed.
        let mut refused = payload_too_large(Payload::ChatFiles, MAX_CHAT_FILE_BYTES, size);
        refused.error = format!(
            "the user message's files are {size} bytes; the limit is {MAX_CHAT_FILE_BYTES}"
        );
        return Err(refused);
    }
    Ok(UserExtras {
        id,
        metadata,
        files,
        received_at: None,
    })
}

/// One `file` part: `{mediaType, url, filename?}`, the URL a base64 `data:` URL of that type.
fn file_part(part: &Value) -> Result<FilePart, ApiError> {
    let text = |field: &str| part.get(field).and_then(Value::as_str);
    let media_type = text("mediaType").ok_or_else(|| malformed("a file part has no mediaType"))?;
    if !MEDIA_TYPES.contains(&media_type) {
        return Err(malformed(&format!(
            "a file part's mediaType must be one of {}",
            MEDIA_TYPES.join(", ")
        )));
    }
    let url = text("url").ok_or_else(|| malformed("a file part has no url"))?;
    let data = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
        .filter(|(declared, _)| *declared == media_type)
        .map(|(_, data)| data)
        .ok_or_else(|| {
            malformed("a file part's url must be a base64 data: URL of its mediaType")
        })?;
    if data.is_empty()
        || !data
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
    {
        return Err(malformed("a file part's data is not base64"));
    }
    let filename = bounded_text(
        part,
        "filename",
        MAX_FILENAME_BYTES,
        "a file part's filename",
    )?;
    Ok(FilePart {
        media_type: media_type.to_owned(),
        url: url.to_owned(),
        filename,
    })
}

/// The optional string `field` of `value`, of 1 to `max` bytes (`what` names it in a refusal).
fn bounded_text(
    value: &Value,
    field: &str,
    max: usize,
    what: &str,
) -> Result<Option<String>, ApiError> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if !text.is_empty() && text.len() <= max => {
            Ok(Some(text.clone()))
        }
        Some(_) => Err(malformed(&format!(
            "{what} must be a string of 1 to {max} bytes"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_core::ErrorCode;
    use serde_json::json;

    fn file(media_type: &str, url: String) -> Value {
        json!({"type": "file", "mediaType": media_type, "url": url})
    }

    #[test]
    fn a_messages_id_metadata_and_files_are_kept_and_bad_ones_refused() {
        let png = file("image/png", "data:image/png;base64,iVBORw0KGgo=".into());
        let message = json!({"id": "m-1", "metadata": {"a": 1}});
        let extras = user_extras(&message, std::slice::from_ref(&png)).unwrap();
        assert_eq!(extras.id.as_deref(), Some("m-1"));
        assert_eq!(extras.metadata, Some(json!({"a": 1})));
        assert_eq!(extras.files.len(), 1);
        assert_eq!(extras.files[0].base64_data(), "iVBORw0KGgo=");

        for bad in [
            file("text/html", "data:text/html;base64,PGI+".into()),
            file("image/png", "https://example.com/a.png".into()),
            file("image/png", "data:image/jpeg;base64,AAAA".into()),
            file("image/png", "data:image/png;base64,<script>".into()),
            json!({"type": "file", "url": "data:image/png;base64,AAAA"}),
        ] {
            let refused = user_extras(&json!({}), std::slice::from_ref(&bad)).unwrap_err();
            assert_eq!(refused.code, ErrorCode::ValidationError, "{bad}");
        }
        let huge = file(
            "application/pdf",
            format!(
                "data:application/pdf;base64,{}",
                "A".repeat(MAX_CHAT_FILE_BYTES)
            ),
        );
        let refused = user_extras(&json!({}), &[huge]).unwrap_err();
        assert_eq!(refused.code, ErrorCode::ValidationPayloadTooLarge);
        assert!(matches!(
            refused.refusal(),
            Some(baton_core::Refusal::PayloadTooLarge {
                cause: Payload::ChatFiles,
                limit_bytes,
                ..
            }) if limit_bytes == MAX_CHAT_FILE_BYTES as u64
        ));
        let long_id = json!({"id": "x".repeat(MAX_MESSAGE_ID_BYTES + 1)});
        assert!(user_extras(&long_id, &[]).is_err());
        let heavy = json!({"metadata": {"a": "x".repeat(MAX_MESSAGE_METADATA_BYTES)}});
        assert!(user_extras(&heavy, &[]).is_err());
    }

    #[test]
    fn the_files_are_capped_in_number_and_filename_not_only_in_bytes() {
        let dot = || file("image/png", "data:image/png;base64,AAAA".into());
        let named = |name: &str| {
            let mut part = dot();
            part["filename"] = json!(name);
            part
        };
        let most: Vec<Value> = (0..MAX_CHAT_FILES).map(|_| dot()).collect();
        assert_eq!(
            user_extras(&json!({}), &most).unwrap().files.len(),
            MAX_CHAT_FILES
        );
        let more: Vec<Value> = (0..=MAX_CHAT_FILES).map(|_| dot()).collect();
        let refused = user_extras(&json!({}), &more).unwrap_err();
        assert_eq!(refused.code, ErrorCode::ValidationError);
        let longest = "f".repeat(MAX_FILENAME_BYTES);
        let kept = user_extras(&json!({}), &[named(&longest)]).unwrap();
        assert_eq!(kept.files[0].filename.as_deref(), Some(longest.as_str()));
        for bad in [
            named(&"f".repeat(MAX_FILENAME_BYTES + 1)),
            named(""),
            json!({"type": "file", "mediaType": "image/png",
                   "url": "data:image/png;base64,AAAA", "filename": 7}),
        ] {
            let refused = user_extras(&json!({}), &[bad]).unwrap_err();
            assert_eq!(refused.code, ErrorCode::ValidationError);
            assert!(refused.error.len() < 200, "{}", refused.error);
        }
    }
}

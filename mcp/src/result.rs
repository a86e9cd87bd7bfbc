//! An MCP tool result (its JSON: `content`, `structuredContent`, `isError`) as Baton's: the
//! structured content when there is one, else the text of its text blocks (other blocks named
//! by their type); an error result is a tool error the model sees.

use baton_core::{message::ToolError, tool::codes};
use serde_json::Value;

/// The result's structured content, if it has one.
pub(crate) fn structured(result: &Value) -> Option<&Value> {
    result.get("structuredContent").filter(|v| !v.is_null())
}

/// The text of the result's content blocks, joined.
fn text(result: &Value) -> String {
    let blocks = result["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    blocks
        .iter()
        .map(|block| match block["type"].as_str() {
            Some("text") => block["text"].as_str().unwrap_or_default().to_owned(),
            Some(kind) => format!("[{kind}]"),
            None => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The value the model gets for a result, or the tool error of an error result.
pub(crate) fn to_value(result: &Value) -> Result<Value, ToolError> {
    if result["isError"].as_bool() == Some(true) {
        return Err(ToolError::new(codes::TOOL_FAILED, text(result)));
    }
    Ok(match structured(result) {
        Some(structured) => structured.clone(),
        None => Value::String(text(result)),
    })
}

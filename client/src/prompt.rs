//! The terminal's side of `baton run --answer`: each awaited call asked in words (its input as
//! `name: value` lines), an approval as y/N, and a client call's result read as its tool's
//! output schema says (one prompt per property of an object of scalars, a typed prompt for a
//! scalar) rather than as JSON; a line that is already the whole answer as JSON is taken as it
//! is, and a schema of another shape (or none) reads one line as JSON, or else as text.

use crate::{
    Client,
    render::{field, json as json_line},
};
use anyhow::Context;
use baton_wire::{message::ToolOutcome, session::ApprovalDecision};
use serde_json::Value;

/// One call a suspension waits on a person for.
pub struct Awaited {
    pub id: String,
    pub tool: String,
    pub input: Value,
    pub approval_id: Option<String>,
    /// The client tool's output schema, when the server listed it.
    pub output_schema: Option<Value>,
}

/// How many times a value that does not read as its type is asked again.
const ATTEMPTS: usize = 3;

/// Asks the terminal for one call's answer (a decision for an approval) and submits it.
pub async fn answer_call(
    client: &dyn Client,
    session_id: &str,
    call: Awaited,
) -> anyhow::Result<()> {
    eprintln!("{} asks:", field(&call.tool));
    for line in described(&call.input) {
        eprintln!("  {line}");
    }
    if let Some(approval_id) = &call.approval_id {
        eprint!("? approve {} [y/N] > ", field(&call.tool));
        let line = read_line().await?;
        let approved = matches!(line.trim(), "y" | "Y" | "yes");
        let decision = ApprovalDecision {
            approved,
            reason: (!approved).then(|| "declined at the terminal".to_owned()),
            arguments: None,
        };
        client
            .submit_approval(session_id, &call.id, approval_id, &decision)
            .await?;
        return Ok(());
    }
    let result = result_for(&call.tool, call.output_schema.as_ref()).await?;
    client
        .submit(session_id, &call.id, &ToolOutcome::Result(result))
        .await?;
    Ok(())
}

/// A call's input as people read it: `name: value` per property (text as it is), or its JSON.
fn described(input: &Value) -> Vec<String> {
    match input {
        Value::Object(properties) if !properties.is_empty() => properties
            .iter()
            .map(|(name, value)| match value {
                Value::String(text) => format!("{}: {}", field(name), field(text)),
                other => format!("{}: {}", field(name), field(&other.to_string())),
            })
            .collect(),
        Value::Object(_) => Vec::new(),
        other => vec![json_line(other).unwrap_or_default()],
    }
}

/// A scalar the terminal can read a value of.
#[derive(Debug, Clone, PartialEq)]
enum Scalar {
    Text,
    Number,
    Integer,
    Boolean,
    OneOf(Vec<Value>),
}

impl Scalar {
    fn of(schema: &Value) -> Option<Self> {
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return Some(Self::OneOf(values.clone()));
        }
        match schema.get("type")?.as_str()? {
            "string" => Some(Self::Text),
            "number" => Some(Self::Number),
            "integer" => Some(Self::Integer),
            "boolean" => Some(Self::Boolean),
            _ => None,
        }
    }

    fn name(&self) -> String {
        match self {
            Self::Text => "text".to_owned(),
            Self::Number => "a number".to_owned(),
            Self::Integer => "a whole number".to_owned(),
            Self::Boolean => "y/n".to_owned(),
            Self::OneOf(values) => {
                let shown: Vec<String> = values
                    .iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    .collect();
                format!("one of {}", shown.join(", "))
            }
        }
    }

    /// The value `line` reads as, if it reads as one.
    fn read(&self, line: &str) -> Option<Value> {
        let line = line.trim();
        match self {
            // A JSON string (quoted) is its text; anything else is the text typed.
            Self::Text => Some(match serde_json::from_str::<Value>(line) {
                Ok(Value::String(text)) => Value::String(text),
                _ => Value::String(line.to_owned()),
            }),
            Self::Number => line
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number),
            Self::Integer => line.parse::<i64>().ok().map(Value::from),
            Self::Boolean => match line {
                "y" | "Y" | "yes" | "true" => Some(Value::Bool(true)),
                "n" | "N" | "no" | "false" => Some(Value::Bool(false)),
                _ => None,
            },
            Self::OneOf(values) => values
                .iter()
                .find(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned) == line)
                .cloned(),
        }
    }
}

/// What the schema asks for: one scalar, an object of scalars (its properties in order, each
/// with whether it is required), or anything else.
#[derive(Debug, PartialEq)]
enum Shape {
    One(Scalar),
    Fields(Vec<(String, Scalar, bool)>),
    Raw,
}

fn shape(schema: Option<&Value>) -> Shape {
    let Some(schema) = schema else {
        return Shape::Raw;
    };
    if let Some(scalar) = Scalar::of(schema) {
        return Shape::One(scalar);
    }
    let Some(properties) = schema
        .get("properties")
        .and_then(Value::as_object)
        .filter(|_| schema.get("type").and_then(Value::as_str) == Some("object"))
    else {
        return Shape::Raw;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Option<Vec<_>> = properties
        .iter()
        .map(|(name, property)| {
            Scalar::of(property).map(|s| (name.clone(), s, required.contains(&name.as_str())))
        })
        .collect();
    match fields {
        Some(fields) if !fields.is_empty() => Shape::Fields(fields),
        _ => Shape::Raw,
    }
}

/// Reads a client call's result from the terminal, as `schema` says.
async fn result_for(tool: &str, schema: Option<&Value>) -> anyhow::Result<Value> {
    match shape(schema) {
        Shape::Raw => {
            eprint!("? {} (JSON, or else text) > ", field(tool));
            let line = read_line().await?;
            Ok(serde_json::from_str(&line).unwrap_or(Value::String(line)))
        }
        Shape::One(scalar) => {
            let asked = format!("? {} ({}) > ", field(tool), scalar.name());
            ask(&asked, &scalar, true)
                .await?
                .context("an answer is required")
        }
        Shape::Fields(fields) => {
            let mut answer = serde_json::Map::new();
            for (index, (name, scalar, required)) in fields.iter().enumerate() {
                let optional = if *required { "" } else { ", optional" };
                let asked = format!(
                    "? {} · {} ({}{optional}) > ",
                    field(tool),
                    field(name),
                    scalar.name()
                );
                if index == 0 {
                    // The whole answer typed as a JSON object is taken as it is.
                    eprint!("{asked}");
                    let line = read_line().await?;
                    if let Ok(Value::Object(whole)) = serde_json::from_str::<Value>(&line) {
                        return Ok(Value::Object(whole));
                    }
                    if let Some(value) = read_or_ask(&asked, scalar, *required, &line).await? {
                        answer.insert(name.clone(), value);
                    }
                    continue;
                }
                if let Some(value) = ask(&asked, scalar, *required).await? {
                    answer.insert(name.clone(), value);
                }
            }
            Ok(Value::Object(answer))
        }
    }
}

/// Asks `asked` until a line reads as `scalar` (an empty line skips an optional value).
async fn ask(asked: &str, scalar: &Scalar, required: bool) -> anyhow::Result<Option<Value>> {
    eprint!("{asked}");
    let line = read_line().await?;
    read_or_ask(asked, scalar, required, &line).await
}

async fn read_or_ask(
    asked: &str,
    scalar: &Scalar,
    required: bool,
    first: &str,
) -> anyhow::Result<Option<Value>> {
    let mut line = first.to_owned();
    for _ in 0..ATTEMPTS {
        if line.trim().is_empty() && !required {
            return Ok(None);
        }
        if let Some(value) = scalar.read(&line) {
            return Ok(Some(value));
        }
        eprintln!("  that is not {}", scalar.name());
        eprint!("{asked}");
        line = read_line().await?;
    }
    anyhow::bail!("no answer read as {} after {ATTEMPTS} tries", scalar.name())
}

pub async fn read_line() -> anyhow::Result<String> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let read = std::io::stdin().read_line(&mut line)?;
        anyhow::ensure!(read > 0, "standard input ended before the answer");
        Ok(line.trim_end_matches(['\r', '\n']).to_owned())
    })
    .await?
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_of_scalars_is_asked_field_by_field_and_anything_else_is_raw() {
        let schema = json!({"type": "object", "required": ["name"],
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                           "size": {"enum": ["s", "m"]}}});
        let Shape::Fields(fields) = shape(Some(&schema)) else {
            panic!("fields");
        };
        let names: Vec<(&str, bool)> = fields.iter().map(|(n, _, r)| (n.as_str(), *r)).collect();
        assert_eq!(names, [("age", false), ("name", true), ("size", false)]);
        assert_eq!(
            shape(Some(&json!({"type": "string"}))),
            Shape::One(Scalar::Text)
        );
        let nested = json!({"type": "object", "properties": {"a": {"type": "object"}}});
        assert_eq!(shape(Some(&nested)), Shape::Raw);
        assert_eq!(shape(None), Shape::Raw);
    }

    #[test]
    fn a_line_reads_as_its_scalar_or_not_at_all() {
        assert_eq!(Scalar::Text.read("Ada"), Some(json!("Ada")));
        assert_eq!(Scalar::Text.read("\"Ada\""), Some(json!("Ada")));
        assert_eq!(Scalar::Integer.read("42"), Some(json!(42)));
        assert_eq!(Scalar::Integer.read("4.2"), None);
        assert_eq!(Scalar::Number.read("4.5"), Some(json!(4.5)));
        assert_eq!(Scalar::Boolean.read("yes"), Some(json!(true)));
        assert_eq!(Scalar::Boolean.read("maybe"), None);
        let sizes = Scalar::OneOf(vec![json!("s"), json!("m")]);
        assert_eq!(sizes.read("m"), Some(json!("m")));
        assert_eq!(sizes.read("xl"), None);
    }
}

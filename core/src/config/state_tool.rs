//! What an agents file declares about its custom state beyond the schema: a state tool, which
//! sets declared fields of the state from its input (`[[agent.state_tool]]`), and a sub-agent's
//! fold, which copies a child's output or a field of its state into the parent's state when the
//! call ends (`fold` of `[[agent.sub_agent]]`, the agent's `after_sub_agent` hook).

use crate::{
    ServerTool, ToolExecution, ToolSpec,
    agent::AgentBuilder,
    chunk::EndStatus,
    message::{ToolError, codes},
    state::{ChildEnded, StateSet},
    tool::ToolContext,
};
use async_trait::async_trait;
use serde_json::{Map, Value, json};

/// A tool that sets top-level fields of the session's custom state from its input: each field
/// the model passes is set (checked against the state's schema with the call's other changes).
pub(super) struct StateTool {
    spec: ToolSpec,
    validator: jsonschema::Validator,
}

impl StateTool {
    /// The tool `name` setting `fields`, whose input schema takes each field's schema from the
    /// state's `properties`. Refused when a field is not one of them.
    pub(super) fn new(
        name: &str,
        description: &str,
        fields: &[String],
        state_schema: &Value,
    ) -> Result<Self, String> {
        let declared = state_schema.get("properties").and_then(Value::as_object);
        let mut properties = Map::new();
        for field in fields {
            let schema = declared
                .and_then(|declared| declared.get(field))
                .ok_or_else(|| {
                    format!("state_tool {name:?} sets {field:?}, which the state does not declare")
                })?;
            properties.insert(field.clone(), schema.clone());
        }
        if properties.is_empty() {
            return Err(format!("state_tool {name:?} sets no field"));
        }
        let input_schema = json!({
            "type": "object",
            "properties": properties,
            "additionalProperties": false,
        });
        let validator = jsonschema::validator_for(&input_schema).map_err(|e| e.to_string())?;
        Ok(Self {
            spec: ToolSpec {
                name: name.to_owned(),
                description: description.to_owned(),
                input_schema,
            },
            validator,
        })
    }
}

#[async_trait]
impl ServerTool for StateTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Setting fields is quick and touches nothing outside the session: it runs in the step.
    fn execution(&self) -> ToolExecution {
        ToolExecution::Inline
    }

    fn check_input(&self, input: &Value) -> Result<(), ToolError> {
        let errors: Vec<String> = self
            .validator
            .iter_errors(input)
            .map(|e| e.to_string())
            .collect();
        if errors.is_empty() {
            return Ok(());
        }
        Err(ToolError::new(codes::INVALID_TOOL_INPUT, errors.join("; ")))
    }

    async fn call(&self, context: &ToolContext, input: Value) -> Result<Value, ToolError> {
        self.check_input(&input)?;
        let fields = input.as_object().cloned().unwrap_or_default();
        let mut set = Vec::new();
        for (field, value) in fields {
            let pointer = format!("/{}", field.replace('~', "~0").replace('/', "~1"));
            context
                .set_state_field(&pointer, value)
                .map_err(|e| ToolError::new(codes::INVALID_STATE_PATCH, e.to_string()))?;
            set.push(field);
        }
        Ok(json!({ "set": set }))
    }
}

/// One sub-agent's fold: when a call of `agent_type` completes, `into` (a JSON Pointer into the
/// parent's state) is set to the child's output (`from = "output"`: its JSON, or the text) or to
/// a field of the child's state (`from` a JSON Pointer into it).
#[derive(Debug, Clone)]
pub(super) struct Fold {
    pub(super) agent_type: String,
    pub(super) into: String,
    pub(super) from: String,
}

impl Fold {
    /// `from` is `output` or a JSON Pointer; `into` a JSON Pointer.
    pub(super) fn checked(self) -> Result<Self, String> {
        if !self.into.starts_with('/') {
            return Err(format!("fold into {:?}: not a JSON Pointer", self.into));
        }
        if self.from != "output" && !self.from.starts_with('/') {
            return Err(format!(
                "fold from {:?}: \"output\" or a JSON Pointer into the child's state",
                self.from
            ));
        }
        Ok(self)
    }

    fn set(&self, ended: &ChildEnded<'_>) -> Option<StateSet> {
        if ended.agent_type != self.agent_type || ended.status != EndStatus::Completed {
            return None;
        }
        let value = if self.from == "output" {
            let output = ended.output?;
            serde_json::from_str(output).unwrap_or_else(|_| Value::String(output.to_owned()))
        } else {
            ended.state?.pointer(&self.from)?.clone()
        };
        Some(StateSet::new(&self.into, value))
    }
}

/// The agent with the `after_sub_agent` hook of its folds (none: as it is): each completed
/// call sets what its sub-agent's fold says.
pub(super) fn with_folds(builder: AgentBuilder, folds: Vec<Fold>) -> AgentBuilder {
    if folds.is_empty() {
        return builder;
    }
    builder.after_sub_agent(move |ended: &ChildEnded<'_>| {
        folds.iter().filter_map(|fold| fold.set(ended)).collect()
    })
}

//! Server tools: async Rust functions the model may call, with a JSON Schema derived from their
//! input type. The input is checked against the schema and decoded before the function runs, so
//! a bad input becomes a tool error the model sees, never a crash.

use crate::message::ToolError;
use async_trait::async_trait;
use futures::FutureExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;
use std::{future::Future, marker::PhantomData, panic::AssertUnwindSafe, sync::Arc};

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// Where a server tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolExecution {
    /// A Temporal activity of its own: survives worker loss individually, can run for long and
    /// costs one more workflow task per step. The default.
    #[default]
    Activity,
    /// Runs inside the model-step activity as soon as the model has called it; when every tool
    /// of a step is inline, that activity also commits the step, so the step costs one activity
    /// and one workflow task. For quick tools (a few seconds at most): a worker lost mid-call
    /// re-runs the model step, which finds the turn and finished results in Redis and runs only
    /// what is missing.
    Inline,
}

/// A tool that runs on the server.
#[async_trait]
pub trait ServerTool: Send + Sync {
    fn spec(&self) -> &ToolSpec;

    fn execution(&self) -> ToolExecution {
        ToolExecution::Activity
    }

    /// Validates `input` and runs the tool. Errors, including a panic inside the tool, come back
    /// as a [`ToolError`].
    async fn call(&self, input: Value) -> Result<Value, ToolError>;
}

/// Error codes a server tool call may end with: the [`ErrorCode`]s of tools, as strings because
/// a tool error's code is open (a future client tool may answer with its own).
///
/// [`ErrorCode`]: crate::ErrorCode
pub mod codes {
    use crate::ErrorCode;
    pub const INVALID_TOOL_INPUT: &str = ErrorCode::InvalidToolInput.as_str();
    pub const TOOL_FAILED: &str = ErrorCode::ToolFailed.as_str();
    pub const TOOL_PANICKED: &str = ErrorCode::ToolPanicked.as_str();
    pub const UNKNOWN_TOOL: &str = ErrorCode::UnknownTool.as_str();
}

/// A server tool made of an async function `Fn(I) -> Result<O, E>`.
pub struct FnTool<I, O, E, F> {
    spec: ToolSpec,
    validator: jsonschema::Validator,
    execution: ToolExecution,
    function: F,
    types: PhantomData<fn(I) -> Result<O, E>>,
}

/// Makes a server tool from an async function. The input type's JSON Schema is derived with
/// `schemars` and sent to the model.
///
/// ```
/// use baton_core::tool::{tool, ServerTool};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: f64, b: f64 }
/// let add = tool("add", "Adds two numbers", |i: Add| async move { Ok::<_, String>(i.a + i.b) });
/// assert_eq!(add.spec().name, "add");
/// ```
pub fn tool<I, O, E, F, Fut>(name: &str, description: &str, function: F) -> FnTool<I, O, E, F>
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + Send + 'static,
    E: std::fmt::Display + Send + 'static,
    F: Fn(I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send + 'static,
{
    let schema = schemars::schema_for!(I).to_value();
    let validator = jsonschema::validator_for(&schema)
        .expect("a schema derived by schemars is a valid JSON Schema");
    FnTool {
        spec: ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: schema,
        },
        validator,
        execution: ToolExecution::Activity,
        function,
        types: PhantomData,
    }
}

impl<I, O, E, F> FnTool<I, O, E, F> {
    /// Runs the tool inside the model-step activity (see [`ToolExecution::Inline`]).
    pub fn inline(mut self) -> Self {
        self.execution = ToolExecution::Inline;
        self
    }

    pub fn into_arc(self) -> Arc<dyn ServerTool>
    where
        Self: ServerTool + 'static,
    {
        Arc::new(self)
    }
}

#[async_trait]
impl<I, O, E, F, Fut> ServerTool for FnTool<I, O, E, F>
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + Send + 'static,
    E: std::fmt::Display + Send + 'static,
    F: Fn(I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send + 'static,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn execution(&self) -> ToolExecution {
        self.execution
    }

    async fn call(&self, input: Value) -> Result<Value, ToolError> {
        if let Some(first) = self.validator.iter_errors(&input).next() {
            let path = first.instance_path.to_string();
            let at = if path.is_empty() {
                "the input".to_owned()
            } else {
                path
            };
            return Err(ToolError::new(
                codes::INVALID_TOOL_INPUT,
                format!("{at}: {first}"),
            ));
        }
        let decoded: I = serde_json::from_value(input)
            .map_err(|e| ToolError::new(codes::INVALID_TOOL_INPUT, e.to_string()))?;
        // A panic may happen while the future is made or while it runs; both become tool errors.
        let future = std::panic::catch_unwind(AssertUnwindSafe(|| (self.function)(decoded)))
            .map_err(panic_to_tool_error)?;
        let outcome = AssertUnwindSafe(future)
            .catch_unwind()
            .await
            .map_err(panic_to_tool_error)?;
        let output = outcome.map_err(|e| ToolError::new(codes::TOOL_FAILED, e.to_string()))?;
        serde_json::to_value(output).map_err(|e| ToolError::new(codes::TOOL_FAILED, e.to_string()))
    }
}

fn panic_to_tool_error(panic: Box<dyn std::any::Any + Send>) -> ToolError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the tool panicked".to_owned());
    ToolError::new(codes::TOOL_PANICKED, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    struct Divide {
        a: f64,
        b: f64,
    }

    fn divide()
    -> FnTool<Divide, f64, String, impl Fn(Divide) -> futures::future::Ready<Result<f64, String>>>
    {
        tool("divide", "a / b", |i: Divide| {
            futures::future::ready(if i.b == 0.0 {
                Err("division by zero".to_owned())
            } else if i.a < 0.0 {
                panic!("negative numerator")
            } else {
                Ok(i.a / i.b)
            })
        })
    }

    #[tokio::test]
    async fn validates_runs_and_contains_failures() {
        let divide = divide();
        assert_eq!(
            divide.spec().input_schema["properties"]["a"]["type"],
            "number"
        );
        assert_eq!(
            divide.call(json!({"a": 6, "b": 3})).await.unwrap(),
            json!(2.0)
        );

        let missing = divide.call(json!({"a": 6})).await.unwrap_err();
        assert_eq!(missing.code, codes::INVALID_TOOL_INPUT);
        assert!(missing.message.contains("\"b\""), "{}", missing.message);

        let wrong_type = divide.call(json!({"a": "six", "b": 1})).await.unwrap_err();
        assert_eq!(wrong_type.code, codes::INVALID_TOOL_INPUT);
        assert!(wrong_type.message.contains("/a"), "{}", wrong_type.message);

        let failed = divide.call(json!({"a": 1, "b": 0})).await.unwrap_err();
        assert_eq!(
            failed,
            ToolError::new(codes::TOOL_FAILED, "division by zero")
        );

        let panicked = divide.call(json!({"a": -1, "b": 1})).await.unwrap_err();
        assert_eq!(
            panicked,
            ToolError::new(codes::TOOL_PANICKED, "negative numerator")
        );
    }
}

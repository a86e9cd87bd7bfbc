//! Server tools: async Rust functions the model may call, with a JSON Schema derived from their
//! input type. The input is checked against the schema and decoded before the function runs, so
//! a bad input becomes a tool error the model sees, never a crash.

use crate::message::ToolError;
use async_trait::async_trait;
use futures::{FutureExt, future::BoxFuture};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;
use std::{future::Future, panic::AssertUnwindSafe, sync::Arc};

pub mod ask;
mod context;
pub mod data;
pub mod toolset;

pub use context::ToolContext;
pub use data::{DataError, ToolData};
pub use toolset::Toolset;

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

    /// Whether a person must approve each call before it runs: the run suspends on the call
    /// until an `approval-response` is submitted.
    fn requires_approval(&self) -> bool {
        false
    }

    /// Whether a successful call ends the run with the tool's result as the output, without
    /// another model call (an error result goes back to the model as usual). Only server tools
    /// can: a client tool's answer always goes back to the model.
    fn finishes_run(&self) -> bool {
        false
    }

    /// Whether the tool's side effects must happen at most once per call. Such a tool's start is
    /// recorded before it runs; an attempt that finds the start recorded but no result (a worker
    /// lost mid-call) does not run it again and answers the model with a `tool_outcome_unknown`
    /// error instead. Other tools are at-least-once: a lost attempt runs again.
    fn at_most_once(&self) -> bool {
        false
    }

    /// Checks an input without running the tool (for arguments edited in an approval).
    fn check_input(&self, _input: &Value) -> Result<(), ToolError> {
        Ok(())
    }

    /// Validates `input` and runs the tool for the call `context` describes. Errors, including a
    /// panic inside the tool, come back as a [`ToolError`].
    async fn call(&self, context: &ToolContext, input: Value) -> Result<Value, ToolError>;

    /// Runs the call like [`Self::call`] where the run may suspend on a person: a tool that can
    /// stop to ask and be called again with the answer (an MCP server's `input_required`)
    /// answers [`ask::Called::Asked`], the run suspends with nothing held, and
    /// [`Self::continue_call`] goes on once the person answered. The default runs `call`.
    async fn call_or_ask(
        &self,
        context: &ToolContext,
        input: Value,
    ) -> Result<ask::Called, ToolError> {
        self.call(context, input).await.map(ask::Called::Done)
    }

    /// Goes on with a call that asked ([`ask::Called::Asked`]), given the `continuation` it
    /// answered then and the person's answer. A further question is asked while the call is
    /// held ([`ToolContext::ask_person`]).
    async fn continue_call(
        &self,
        _context: &ToolContext,
        _input: Value,
        _continuation: Value,
        _answer: ask::PersonAnswer,
    ) -> Result<Value, ToolError> {
        Err(ToolError::new(
            codes::TOOL_FAILED,
            format!("the tool {} cannot go on from a question", self.spec().name),
        ))
    }
}

pub use baton_wire::message::codes;

/// The type-erased body of a [`FnTool`]: decodes the input, runs the function and encodes its
/// output. Erasing it keeps `FnTool` one nameable type whatever function it wraps.
type ToolBody =
    dyn Fn(ToolContext, Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;

/// A server tool made of an async function (see [`tool`] and [`tool_with_context`]).
pub struct FnTool {
    spec: ToolSpec,
    validator: jsonschema::Validator,
    execution: ToolExecution,
    approval: bool,
    finish: bool,
    at_most_once: bool,
    body: Box<ToolBody>,
}

/// Makes a server tool from an async function `Fn(I) -> Result<O, E>`. The input type's JSON
/// Schema is derived with `schemars` and sent to the model.
///
/// ```
/// use baton_core::tool::{tool, ServerTool};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: f64, b: f64 }
/// let add = tool("add", "Adds two numbers", |i: Add| async move { Ok::<_, String>(i.a + i.b) });
/// assert_eq!(add.spec().name, "add");
/// ```
pub fn tool<I, O, E, F, Fut>(name: &str, description: &str, function: F) -> FnTool
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + Send + 'static,
    E: std::fmt::Display + Send + 'static,
    F: Fn(I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send + 'static,
{
    tool_with_context(name, description, move |_context, input: I| function(input))
}

/// Makes a server tool from an async function that also receives the call's [`ToolContext`]
/// (`Fn(ToolContext, I) -> Result<O, E>`), for a tool that needs the session's ids or an
/// idempotency key for the service it calls.
///
/// ```
/// use baton_core::tool::{tool_with_context, ServerTool, ToolContext};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Pay { amount: u64 }
/// let pay = tool_with_context("pay", "Pays", |context: ToolContext, i: Pay| async move {
///     // The payment service sees the same key on every attempt of this call.
///     Ok::<_, String>(format!("paid {} with key {}", i.amount, context.idempotency_key()))
/// });
/// assert_eq!(pay.spec().name, "pay");
/// ```
pub fn tool_with_context<I, O, E, F, Fut>(name: &str, description: &str, function: F) -> FnTool
where
    I: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + Send + 'static,
    E: std::fmt::Display + Send + 'static,
    F: Fn(ToolContext, I) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send + 'static,
{
    let schema = schemars::schema_for!(I).to_value();
    let validator = jsonschema::validator_for(&schema)
        .expect("a schema derived by schemars is a valid JSON Schema");
    let body = move |context: ToolContext, input: Value| -> BoxFuture<'static, _> {
        let decoded: I = match serde_json::from_value(input) {
            Ok(decoded) => decoded,
            Err(e) => {
                let error = ToolError::new(codes::INVALID_TOOL_INPUT, e.to_string());
                return futures::future::ready(Err(error)).boxed();
            }
        };
        function(context, decoded)
            .map(|outcome| {
                let output =
                    outcome.map_err(|e| ToolError::new(codes::TOOL_FAILED, e.to_string()))?;
                serde_json::to_value(output)
                    .map_err(|e| ToolError::new(codes::TOOL_FAILED, e.to_string()))
            })
            .boxed()
    };
    FnTool {
        spec: ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: schema,
        },
        validator,
        execution: ToolExecution::Activity,
        approval: false,
        finish: false,
        at_most_once: false,
        body: Box::new(body),
    }
}

impl FnTool {
    /// Runs the tool inside the model-step activity (see [`ToolExecution::Inline`]).
    pub fn inline(mut self) -> Self {
        self.execution = ToolExecution::Inline;
        self
    }

    /// Each call waits for a person's approval before it runs.
    pub fn requires_approval(mut self) -> Self {
        self.approval = true;
        self
    }

    /// A successful call ends the run with its result as the output (see
    /// [`ServerTool::finishes_run`]).
    pub fn finishes_run(mut self) -> Self {
        self.finish = true;
        self
    }

    /// The tool's side effects happen at most once per call (see [`ServerTool::at_most_once`]).
    pub fn at_most_once(mut self) -> Self {
        self.at_most_once = true;
        self
    }

    pub fn into_arc(self) -> Arc<dyn ServerTool> {
        Arc::new(self)
    }
}

#[async_trait]
impl ServerTool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn execution(&self) -> ToolExecution {
        self.execution
    }

    fn requires_approval(&self) -> bool {
        self.approval
    }

    fn finishes_run(&self) -> bool {
        self.finish
    }

    fn at_most_once(&self) -> bool {
        self.at_most_once
    }

    fn check_input(&self, input: &Value) -> Result<(), ToolError> {
        check_against(&self.validator, input)
    }

    async fn call(&self, context: &ToolContext, input: Value) -> Result<Value, ToolError> {
        self.check_input(&input)?;
        // A panic may happen while the future is made or while it runs; both become tool errors.
        let future =
            std::panic::catch_unwind(AssertUnwindSafe(|| (self.body)(context.clone(), input)))
                .map_err(panic_to_tool_error)?;
        AssertUnwindSafe(future)
            .catch_unwind()
            .await
            .map_err(panic_to_tool_error)?
    }
}

/// Checks a tool's input against its schema: the first mismatch is an `invalid_tool_input`
/// error the model can correct. Tools made outside this crate (an MCP server's) check with it too.
pub fn check_against(validator: &jsonschema::Validator, input: &Value) -> Result<(), ToolError> {
    if let Some(first) = validator.iter_errors(input).next() {
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
    Ok(())
}

fn panic_to_tool_error(panic: Box<dyn std::any::Any + Send>) -> ToolError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the tool panicked".to_owned());
    ToolError::new(codes::TOOL_PANICKED, message)
}

/// A tool that runs on the client's side. The server has no body for it: when the model calls
/// it, the run commits its state and suspends until the answer is submitted. Its input schema is
/// sent to the model; its output schema, if any, checks submitted results.
#[derive(Clone)]
pub struct ClientTool {
    spec: ToolSpec,
    input_validator: Arc<jsonschema::Validator>,
    output_schema: Option<Value>,
    output_validator: Option<Arc<jsonschema::Validator>>,
    timeout: Option<std::time::Duration>,
    render: Option<RenderHint>,
}

/// How a front end should render a client tool's call. The server only passes it on (a chat
/// client gets it as a `data-render` part beside the tool part); it never changes what the run
/// does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RenderHint {
    /// A form whose fields come from the tool's output schema (what the person fills in), with
    /// the call's input shown as the request.
    Elicitation,
    /// A button that connects an account (OAuth and the like); the answer says whether it did.
    Connect,
    /// A yes/no question; the answer is the person's choice.
    Confirm,
}

impl std::fmt::Debug for ClientTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTool")
            .field("spec", &self.spec)
            .field("output_schema", &self.output_schema)
            .field("timeout", &self.timeout)
            .field("render", &self.render)
            .finish()
    }
}

/// A JSON Schema given for a client tool that is not a valid schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool {tool:?}: invalid {which} schema: {reason}")]
pub struct SchemaError {
    pub tool: String,
    pub which: &'static str,
    pub reason: String,
}

impl ClientTool {
    /// A client tool with a JSON Schema for its input.
    pub fn new(name: &str, description: &str, input_schema: Value) -> Result<Self, SchemaError> {
        let input_validator = Arc::new(compile(name, "input", &input_schema)?);
        Ok(Self {
            spec: ToolSpec {
                name: name.to_owned(),
                description: description.to_owned(),
                input_schema,
            },
            input_validator,
            output_schema: None,
            output_validator: None,
            timeout: None,
            render: None,
        })
    }

    /// A client tool whose input and output schemas are derived from Rust types.
    pub fn typed<I: JsonSchema, O: JsonSchema>(name: &str, description: &str) -> Self {
        Self::new(name, description, schemars::schema_for!(I).to_value())
            .and_then(|tool| tool.output_schema(schemars::schema_for!(O).to_value()))
            .expect("a schema derived by schemars is a valid JSON Schema")
    }

    /// Submitted results must match this JSON Schema.
    pub fn output_schema(mut self, schema: Value) -> Result<Self, SchemaError> {
        self.output_validator = Some(Arc::new(compile(&self.spec.name, "output", &schema)?));
        self.output_schema = Some(schema);
        Ok(self)
    }

    /// How long the run waits for the answer before the call counts as answered with
    /// `client_tool_timeout`; without it the agent's default applies.
    pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How a front end should render the tool's calls.
    pub fn render(mut self, hint: RenderHint) -> Self {
        self.render = Some(hint);
        self
    }

    pub fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The render hint, if the tool declares one.
    pub fn render_hint(&self) -> Option<RenderHint> {
        self.render
    }

    /// The JSON Schema results must match, if the tool declares one.
    pub fn declared_output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// The render hint as a front end reads it (`{kind, outputSchema?}`: the chat's
    /// `data-render` part, `/status` and `/pending`'s `render`), if the tool declares one.
    pub fn render_json(&self) -> Option<Value> {
        self.render.map(|kind| {
            let mut hint = serde_json::json!({ "kind": kind });
            if let Some(schema) = &self.output_schema {
                hint["outputSchema"] = schema.clone();
            }
            hint
        })
    }

    pub fn timeout_override(&self) -> Option<std::time::Duration> {
        self.timeout
    }

    /// Checks the model's input for a call against the input schema: a call that fails is
    /// answered at once with this error (the model can correct it), never sent to the client.
    pub fn check_input(&self, input: &Value) -> Result<(), ToolError> {
        check_against(&self.input_validator, input)
    }

    /// Checks a submitted result against the output schema (always passes without one). The
    /// error describes the first mismatch, for logs and verbose answers only.
    pub fn check_output(&self, result: &Value) -> Result<(), String> {
        match &self.output_validator {
            None => Ok(()),
            Some(validator) => match validator.iter_errors(result).next() {
                None => Ok(()),
                Some(first) => Err(format!("{}: {first}", first.instance_path)),
            },
        }
    }
}

/// A validator for a tool's `which` (input, output) schema, or why the schema is not valid.
pub(crate) fn compile(
    tool: &str,
    which: &'static str,
    schema: &Value,
) -> Result<jsonschema::Validator, SchemaError> {
    jsonschema::validator_for(schema).map_err(|e| SchemaError {
        tool: tool.to_owned(),
        which,
        reason: e.to_string(),
    })
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

    fn divide() -> FnTool {
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
        let context = some_context();
        assert_eq!(
            divide.spec().input_schema["properties"]["a"]["type"],
            "number"
        );
        assert_eq!(
            divide
                .call(&context, json!({"a": 6, "b": 3}))
                .await
                .unwrap(),
            json!(2.0)
        );

        let missing = divide.call(&context, json!({"a": 6})).await.unwrap_err();
        assert_eq!(missing.code, codes::INVALID_TOOL_INPUT);
        assert!(missing.message.contains("\"b\""), "{}", missing.message);

        let wrong_type = divide
            .call(&context, json!({"a": "six", "b": 1}))
            .await
            .unwrap_err();
        assert_eq!(wrong_type.code, codes::INVALID_TOOL_INPUT);
        assert!(wrong_type.message.contains("/a"), "{}", wrong_type.message);

        let failed = divide
            .call(&context, json!({"a": 1, "b": 0}))
            .await
            .unwrap_err();
        assert_eq!(
            failed,
            ToolError::new(codes::TOOL_FAILED, "division by zero")
        );

        let panicked = divide
            .call(&context, json!({"a": -1, "b": 1}))
            .await
            .unwrap_err();
        assert_eq!(
            panicked,
            ToolError::new(codes::TOOL_PANICKED, "negative numerator")
        );
    }

    fn some_context() -> ToolContext {
        let address = crate::store::SessionAddress::root("session-1");
        ToolContext::new(address, "run-1", "call-1")
    }

    #[tokio::test]
    async fn a_tool_with_context_sees_the_call_it_serves() {
        let echo = tool_with_context(
            "echo",
            "ids",
            |context: ToolContext, _: Divide| async move {
                Ok::<_, String>(json!({
                    "key": context.idempotency_key(),
                    "run": context.run_id(),
                }))
            },
        );
        let context = some_context();
        let answer = echo.call(&context, json!({"a": 1, "b": 2})).await.unwrap();
        assert_eq!(answer, json!({"key": "session-1/call-1", "run": "run-1"}));
        let refused = echo.call(&context, json!({"a": 1})).await.unwrap_err();
        assert_eq!(refused.code, codes::INVALID_TOOL_INPUT);
    }
}

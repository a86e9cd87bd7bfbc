//! `GET /openapi.json`: the OpenAPI 3.1 document of this server's HTTP routes. Every body's
//! schema is generated from the Rust type the route decodes or answers (`schemars`, JSON Schema
//! 2020-12, which OpenAPI 3.1 takes as it is), the one error envelope with its codes as an enum;
//! the table below says which route takes and answers which type and which credentials it
//! reads. `docs/openapi.json` is this document for the default options, kept equal by a test.

use super::{error::HttpError, mount::Mount};
use crate::{ai_sdk, ops::Readiness, state::AppState};
use axum::{Json, extract::State};
use baton_core::{
    api, chunk::StreamChunk, error::ApiError, fork, remote, search, session, submit, tokens,
};
use schemars::{JsonSchema, SchemaGenerator, generate::SchemaSettings};
use serde_json::{Map, Value, json};

/// Who may call a route.
#[derive(Clone, Copy)]
enum Access {
    /// Any of the API's credentials: an operator key, a user token, a session token.
    Api,
    /// An operator key only.
    Operator,
    /// An operator key or a user token (starting sessions).
    Starter,
    /// The producer mount's: a service key (or an operator key).
    Mount,
    /// No bearer credential is read.
    Open,
}

/// What a route answers on success.
enum Answer {
    Json(Value),
    /// A stream of server-sent events whose `data` is this schema.
    Events(Value),
    Text(&'static str),
    NoContent,
}

struct Route {
    method: &'static str,
    path: String,
    id: String,
    summary: &'static str,
    tag: &'static str,
    access: Access,
    query: Vec<Value>,
    body: Option<Value>,
    answer: Answer,
    /// Its refusals are the remote-agent protocol's envelope (`remote::ErrorBody`), not the
    /// API's.
    remote_errors: bool,
}

/// A route that takes nothing and answers 204, until told otherwise.
fn op(
    method: &'static str,
    path: &str,
    id: &str,
    summary: &'static str,
    tag: &'static str,
    access: Access,
) -> Route {
    Route {
        method,
        path: path.to_owned(),
        id: id.to_owned(),
        summary,
        tag,
        access,
        query: Vec::new(),
        body: None,
        answer: Answer::NoContent,
        remote_errors: false,
    }
}

impl Route {
    fn query(mut self, query: Vec<Value>) -> Self {
        self.query = query;
        self
    }

    fn body(mut self, schema: Value) -> Self {
        self.body = Some(schema);
        self
    }

    fn json(mut self, schema: Value) -> Self {
        self.answer = Answer::Json(schema);
        self
    }

    fn events(mut self, data: Value) -> Self {
        self.answer = Answer::Events(data);
        self
    }

    fn text(mut self, media: &'static str) -> Self {
        self.answer = Answer::Text(media);
        self
    }
}

/// A query parameter.
fn param(name: &str, required: bool, schema: Value, description: &str) -> Value {
    json!({"name": name, "in": "query", "required": required, "schema": schema,
           "description": description})
}

/// What a session id is (`ids::is_valid_session_id`): a root's name (1 to 64 of letters,
/// digits, `-` and `_`, no `__`), and for a child `.` and 32 hex digits.
const SESSION_ID_PATTERN: &str = "^(?!.*__)[A-Za-z0-9_-]{1,64}(\\.[0-9a-fA-F]{32})?$";
/// What an agent type is (`ids::is_valid_name`).
const NAME_PATTERN: &str = "^(?!.*__)[A-Za-z0-9_-]{1,64}$";

fn session_id() -> Value {
    json!({"type": "string", "pattern": SESSION_ID_PATTERN})
}

fn session_query(follow: bool) -> Vec<Value> {
    let mut query = vec![param("sessionId", true, session_id(), "the session")];
    if follow {
        query.push(param(
            "fromSequence",
            false,
            json!({"type": "integer", "minimum": 0, "default": 0}),
            "follow after this sequence (exclusive)",
        ));
    }
    query
}

/// The search's query parameters (`/sessions`, `/pending`).
fn search_query() -> Vec<Value> {
    let text = json!({"type": "string"});
    let ms = json!({"type": "integer", "minimum": 0});
    vec![
        param(
            "status",
            false,
            json!({"enum": ["active", "suspended_client_tool", "completed", "failed", "interrupted"]}),
            "the session's status",
        ),
        param("agent", false, text.clone(), "the agent type"),
        param(
            "userId",
            false,
            text.clone(),
            "the end user the sessions are for",
        ),
        param(
            "tag",
            false,
            json!({"type": "array", "items": {"type": "string"}}),
            "a tag each session carries (repeatable: all of them)",
        ),
        param(
            "awaiting",
            false,
            json!({"const": "person"}),
            "only trees with a client call or approval open (`metadata.<key>=<value>` filters \
             on a metadata entry too)",
        ),
        param(
            "updatedAfter",
            false,
            ms.clone(),
            "last activity at or after (ms since the epoch)",
        ),
        param(
            "updatedBefore",
            false,
            ms,
            "last activity at or before (ms since the epoch)",
        ),
        param(
            "limit",
            false,
            json!({"type": "integer", "minimum": 1, "maximum": search::MAX_PAGE_LIMIT}),
            "sessions a page covers",
        ),
        param(
            "cursor",
            false,
            json!({"type": "string", "minLength": 1}),
            "the `nextCursor` of the page before (opaque: any other is refused)",
        ),
        param("root", false, session_id(), "only this tree (no paging)"),
        param(
            "includeChildren",
            false,
            json!({"type": "boolean"}),
            "children too (each row names its root)",
        ),
    ]
}

/// The routes of the API, the chat, the pages and, for each mount, the producer protocol.
fn routes(schemas: &mut SchemaGenerator, mounts: &[Mount], demo: bool) -> Vec<Route> {
    fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> schemars::Schema {
        generator.subschema_for::<T>()
    }
    let mut of = |schema: fn(&mut SchemaGenerator) -> schemars::Schema| schema(schemas).to_value();
    let chunk = of(schema::<StreamChunk>);
    let state = of(schema::<session::SessionState>);
    let mut list = vec![
        op("post", "/start", "start", "Start a session", "sessions", Access::Starter).body(of(schema::<api::StartRequest>)).json(of(schema::<api::StartResponse>)),
        op("get", "/status", "status", "A session's state, with the calls it awaits", "sessions", Access::Api).query(session_query(false)).json(state.clone()),
        op("get", "/sse", "follow", "Follow a session's stream (an event per chunk, `id:` its sequence; a last event `error` ends it)", "sessions", Access::Api).query(session_query(true)).events(chunk.clone()),
        op("post", "/submit-tool-result", "submit", "Answer a client call or an approval", "sessions", Access::Api).body(of(schema::<submit::SubmitRequest>)).json(of(schema::<submit::SubmitAnswer>)),
        op("post", "/resume", "resume", "Continue, send the next message, or rewind", "sessions", Access::Api).body(of(schema::<api::ResumeRequest>)).json(of(schema::<api::ResumeResponse>)),
        op("post", "/interrupt", "interrupt", "Stop the current run; the session becomes interrupted", "sessions", Access::Api).body(of(schema::<api::SessionRequest>)).json(of(schema::<api::StopResponse>)),
        op("post", "/abort", "abort", "Stop the current run; the session fails", "sessions", Access::Api).body(of(schema::<api::SessionRequest>)).json(of(schema::<api::StopResponse>)),
        op("post", "/delete", "delete", "Delete a session tree from its root, once no run works on it (one waiting on a person is interrupted first)", "sessions", Access::Api).body(of(schema::<api::SessionRequest>)).json(of(schema::<api::DeleteResponse>)),
        op("get", "/snapshot", "snapshot", "The session's log pinned to a stream position", "sessions", Access::Api).query(session_query(false)).json(of(schema::<api::SnapshotResponse>)),
        op("get", "/usage", "usage", "What the session has spent", "sessions", Access::Api).query(session_query(false)).json(of(schema::<api::UsageResponse>)),
        op("get", "/sessions", "sessions", "Search sessions, newest activity first", "operators", Access::Api).query(search_query()).json(of(schema::<search::SessionsPage>)),
        op("get", "/pending", "pending", "The calls waiting on a person", "operators", Access::Api).query(search_query()).json(of(schema::<search::PendingPage>)),
        op(
            "get",
            "/pending/stream",
            "pendingStream",
            "The inbox as it changes: an event `pending` with the page at once and whenever its calls change",
            "operators",
            Access::Api,
        )
        .query(search_query())
        .events(of(schema::<search::PendingPage>)),
        op("post", "/fork", "fork", "Copy a session up to a checkpoint into a new one", "operators", Access::Api).body(of(schema::<fork::ForkRequest>)).json(of(schema::<fork::ForkResponse>)),
        op("post", "/tokens", "mintUserToken", "Mint a user token", "tokens", Access::Operator).body(of(schema::<tokens::TokenRequest>)).json(of(schema::<tokens::TokenResponse>)),
        op("post", "/tokens/revoke", "revokeTokens", "Revoke a token, or every user token of a user", "tokens", Access::Api).body(
                json!({"oneOf": [of(schema::<tokens::RevokeRequest>), of(schema::<tokens::RevokeUserRequest>)]}),
            ).json(
                json!({"oneOf": [of(schema::<tokens::RevokeResponse>), of(schema::<tokens::RevokeUserResponse>)]}),
            ),
        op("get", "/metrics", "metrics", "Prometheus text", "operations", Access::Operator).text("text/plain"),
        op("get", "/healthz", "healthz", "Liveness: `ok`, reading nothing", "operations", Access::Open).text("text/plain"),
        op("get", "/readyz", "readyz", "Readiness: Redis and Temporal answer (503 naming what did not)", "operations", Access::Open).json(of(schema::<Readiness>)),
        op("get", "/openapi.json", "openapi", "This document", "operations", Access::Open).json(json!({"type": "object"})),
        op("post", "/remote-callbacks/{callerSessionId}", "remoteCallback", "A remote child's signed turn-end callback (its signature is the credential)", "remote", Access::Open).body(of(schema::<remote::CallbackBody>)),
        op("post", "/remote-callbacks/{callerSessionId}/a2a", "a2aPush", "An A2A task's push notification (its `X-A2A-Notification-Token` is the credential)", "remote", Access::Open).body(json!({"type": "object", "description": "the A2A Task, as the agent pushes it", "required": ["id", "contextId", "status"]})),
        op("get", "/console", "console", "The operator console (a page; it calls the API with the key it is given)", "pages", Access::Open).text("text/html"),
        op("get", "/chat", "chatPage", "The demo chat page", "pages", Access::Open).text("text/html"),
        op("post", "/chat", "chat", "The Vercel AI SDK chat route (`useChat`)", "chat", Access::Api).body(of(schema::<ai_sdk::ChatBody>)).events(
                json!({"type": "object", "description": "a chunk of the AI SDK's UI message stream (v1)"}),
            ),
        op("get", "/chat/{id}/stream", "chatReattach", "The running turn (204 when no run works)", "chat", Access::Api).events(
                json!({"type": "object", "description": "a chunk of the AI SDK's UI message stream (v1)"}),
            ),
        op("get", "/chat/{id}/snapshot", "chatSnapshot", "The chat's UI messages", "chat", Access::Api).json(of(schema::<ai_sdk::ChatSnapshot>)),
        op("post", "/chat/{id}/stop", "chatStop", "Interrupt the chat's run", "chat", Access::Api).json(of(schema::<api::StopResponse>)),
        op("delete", "/chat/{id}", "chatDelete", "Delete the chat (its session tree), once no run works on it", "chat", Access::Api).json(of(schema::<api::DeleteResponse>)),
    ];
    if demo {
        list.push(
            op(
                "post",
                "/chat/demo-token",
                "chatDemoToken",
                "The demo page's user token (`batond dev`'s demo mode only; none on an open server)",
                "chat",
                Access::Open,
            )
            .json(json!({"type": "object", "properties": {
                "token": {"type": ["string", "null"]}, "userId": {"type": "string"}}})),
        );
    }
    for (index, mount) in mounts.iter().enumerate() {
        let base = format!("{}/{{agentType}}", mount.base_path);
        // The first mount's operations are `mountStart`…; a second mount's `mount2Start`….
        let suffix = if index == 0 {
            String::new()
        } else {
            (index + 1).to_string()
        };
        let mounted = |method, name: &str, summary| {
            let mut title = name.to_owned();
            title[..1].make_ascii_uppercase();
            let path = format!("{base}/{name}");
            let id = format!("mount{suffix}{title}");
            let mut route = op(method, &path, &id, summary, "mount", Access::Mount);
            route.remote_errors = true;
            route
        };
        list.extend([
            mounted("post", "start", "Start (or attach to) a remote child")
                .body(of(schema::<remote::StartRequest>))
                .json(of(schema::<remote::StartResponse>)),
            mounted("post", "resume", "Resume a remote child")
                .body(of(schema::<api::ResumeRequest>))
                .json(of(schema::<remote::ResumeResponse>)),
            mounted(
                "get",
                "sse",
                "Follow a remote child at the mount's fidelity",
            )
            .query(session_query(true))
            .events(chunk.clone()),
            mounted("get", "status", "A remote child's status")
                .query(session_query(false))
                .json(of(schema::<remote::StatusResponse>)),
            mounted("get", "snapshot", "A remote child's snapshot")
                .query(session_query(false))
                .json(of(schema::<remote::SnapshotResponse>)),
            mounted("get", "usage", "A remote child's usage")
                .query(session_query(false))
                .json(of(schema::<remote::UsageResponse>)),
            mounted("post", "interrupt", "Interrupt a remote child")
                .body(of(schema::<api::SessionRequest>))
                .json(of(schema::<remote::StopResponse>)),
            mounted("post", "abort", "Abort a remote child")
                .body(of(schema::<api::SessionRequest>))
                .json(of(schema::<remote::StopResponse>)),
            mounted(
                "post",
                "submit",
                "A person's answer to a paused remote child's call, relayed",
            )
            .body(of(schema::<submit::SubmitRequest>))
            .json(of(schema::<submit::SubmitAnswer>)),
        ]);
    }
    list
}

/// The operations a session id in an answer's body (`sessionId`) can be passed to.
fn session_links() -> Value {
    let mut links = Map::new();
    for (name, operation) in [
        ("Status", "status"),
        ("Snapshot", "snapshot"),
        ("Usage", "usage"),
    ] {
        links.insert(
            name.into(),
            json!({"operationId": operation,
                   "parameters": {"sessionId": "$response.body#/sessionId"}}),
        );
    }
    Value::Object(links)
}

fn security(access: Access) -> Value {
    let any = |names: &[&str]| Value::Array(names.iter().map(|n| json!({ *n: [] })).collect());
    match access {
        Access::Api => any(&["operatorKey", "userToken", "sessionToken"]),
        Access::Operator => any(&["operatorKey"]),
        Access::Starter => any(&["operatorKey", "userToken"]),
        Access::Mount => any(&["serviceKey", "operatorKey"]),
        Access::Open => json!([]),
    }
}

/// The OpenAPI document of a server serving `mounts` (and, with `demo`, the demo page's token).
pub fn document(mounts: &[Mount], demo: bool) -> Value {
    let mut schemas = SchemaSettings::draft2020_12()
        .with(|settings| settings.definitions_path = "/components/schemas".into())
        .into_generator();
    let api_error = schemas.subschema_for::<ApiError>().to_value();
    let remote_error = schemas.subschema_for::<remote::ErrorBody>().to_value();
    let mut paths = Map::new();
    for route in routes(&mut schemas, mounts, demo) {
        let error = if route.remote_errors {
            remote_error.clone()
        } else {
            api_error.clone()
        };
        let mut operation = Map::new();
        operation.insert("operationId".into(), json!(route.id));
        operation.insert("summary".into(), json!(route.summary));
        operation.insert("tags".into(), json!([route.tag]));
        operation.insert("security".into(), security(route.access));
        let mut parameters = route.query;
        for (name, pattern) in [
            ("agentType", NAME_PATTERN),
            ("id", SESSION_ID_PATTERN),
            ("callerSessionId", SESSION_ID_PATTERN),
        ] {
            if route.path.contains(&format!("{{{name}}}")) {
                parameters.push(json!({"name": name, "in": "path", "required": true,
                                       "schema": {"type": "string", "pattern": pattern}}));
            }
        }
        if !parameters.is_empty() {
            operation.insert("parameters".into(), Value::Array(parameters));
        }
        if let Some(body) = route.body {
            operation.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"application/json": {"schema": body}}}),
            );
        }
        let success = match route.answer {
            Answer::Json(schema) => json!({"200": {"description": "the answer",
                "content": {"application/json": {"schema": schema}}}}),
            Answer::Events(data) => json!({"200": {"description": "server-sent events; each \
                event's `data` is the schema of `x-baton-event-data`",
                "content": {"text/event-stream": {"schema": {"type": "string"},
                    "x-baton-event-data": data}}}}),
            Answer::Text(media) => json!({"200": {"description": "the answer",
                "content": {media: {"schema": {"type": "string"}}}}}),
            Answer::NoContent => json!({"204": {"description": "taken"}}),
        };
        let mut responses = success.as_object().cloned().unwrap_or_default();
        // What a started session's id leads to: its reads (stateful testing follows these).
        if matches!(route.id.as_str(), "start" | "fork")
            && let Some(ok) = responses.get_mut("200").and_then(Value::as_object_mut)
        {
            ok.insert("links".into(), session_links());
        }
        responses.insert(
            "default".into(),
            json!({"description": "a refusal: the one error envelope, its `code` telling why",
                   "content": {"application/json": {"schema": error}}}),
        );
        operation.insert("responses".into(), Value::Object(responses));
        let item = paths.entry(route.path.clone()).or_insert_with(|| json!({}));
        if let Some(item) = item.as_object_mut() {
            item.insert(route.method.into(), Value::Object(operation));
        }
    }
    let bearer =
        |description: &str| json!({"type": "http", "scheme": "bearer", "description": description});
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Baton",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "A durable AI-agent runtime: sessions that suspend for people and \
                resume, over HTTP. Every refusal is the one error envelope.",
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "paths": paths,
        "components": {
            "schemas": constrained(schemas.take_definitions(true)),
            "securitySchemes": {
                "operatorKey": bearer("an operator key (`--api-key`): may do anything"),
                "userToken": bearer("a user token (`POST /tokens`): acts on its user's sessions \
                    and starts sessions of its agent types"),
                "sessionToken": bearer("a session token (the `token` of `/start`): acts on \
                    that session's tree"),
                "serviceKey": bearer("a service key (`--service-key`): reaches only the \
                    producer mount"),
            },
        },
    })
}

/// The schemas with what the server checks of an id written in: a session id's pattern on every
/// property naming a session, an agent type's on `agent` and `agentType`, a length on the ids
/// and user ids a body names.
fn constrained(mut schemas: Map<String, Value>) -> Value {
    fn walk(value: &mut Value) {
        match value {
            Value::Object(object) => {
                if let Some(Value::Object(properties)) = object.get_mut("properties") {
                    for (name, property) in properties.iter_mut() {
                        let constraint = match name.as_str() {
                            "sessionId" | "rootSessionId" | "parentSessionId"
                            | "callerSessionId" => json!({"pattern": SESSION_ID_PATTERN}),
                            "agent" | "agentType" => json!({"pattern": NAME_PATTERN}),
                            // The ids a body names, and a user id (`submit.rs`, `meta.rs`).
                            "toolCallId" | "approvalId" | "userId" => {
                                json!({"minLength": 1, "maxLength": 256})
                            }
                            _ => continue,
                        };
                        if let (Some(property), Some(constraint)) =
                            (property.as_object_mut(), constraint.as_object())
                            && property.get("type") == Some(&json!("string"))
                        {
                            property.extend(constraint.clone());
                        }
                    }
                }
                object.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    schemas.values_mut().for_each(walk);
    Value::Object(schemas)
}

/// `GET /openapi.json`: the document of this server's options, its start naming the agent
/// types it serves (`docs/openapi.json`, the document of the default options, names none).
pub(super) async fn openapi(State(state): State<AppState>) -> Result<Json<Value>, HttpError> {
    let options = &state.options;
    let mut document = document(&options.mounts, options.demo_user_tokens);
    let served: Vec<&str> = state.registry.agent_types().collect();
    if let Some(agent) = document
        .pointer_mut("/components/schemas/StartRequest/properties/agent")
        .and_then(Value::as_object_mut)
    {
        agent.insert("enum".into(), json!(served));
    }
    Ok(Json(document))
}

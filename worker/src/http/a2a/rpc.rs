//! `POST {base}/{agentType}/a2a`: one JSON-RPC 2.0 request, decoded, dispatched by its method
//! and answered. The streamed methods (`message/stream`, `tasks/resubscribe`) are `stream.rs`'s;
//! the others answer here: `message/send` (begin a turn, or answer an `input-required` task;
//! blocking unless the configuration says `blocking: false`), `tasks/get`, `tasks/cancel` (an
//! interrupt) and `tasks/pushNotificationConfig/set|get` (kept with the session). Every action
//! is an operation's (`crate::ops`), with its policy; the checks here only map A2A onto it.

use super::{A2aState, error::RpcError, stream, task};
use crate::{auth::Principal, http::HttpError, ops, stream::Credential};
use axum::{
    Extension, Json,
    body::Body,
    extract::{Path, State},
    http::HeaderMap,
    response::{IntoResponse, Response},
};
use baton_core::{
    ApiError, ErrorCode,
    a2a::{
        Event, GetTaskPushNotificationConfigParams, JsonRpcRequest, JsonRpcResponse,
        MessageSendParams, PushNotificationConfig, Task, TaskIdParams, TaskPushNotificationConfig,
        TaskQueryParams, TaskState, codes, methods,
    },
    api::{ResumeMode, ResumeRequest},
    ids, remote,
    store::{A2aRecord, Continuation, SessionAddress, SessionState, Status, StopKind},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

pub(super) async fn rpc(
    State(state): State<A2aState>,
    Extension(principal): Extension<Principal>,
    Extension(credential): Extension<Credential>,
    Path(agent_type): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let request = match read_request(&state, &headers, body).await {
        Ok(request) => request,
        Err(refused) => return answer::<Value>(Value::Null, Err(refused)),
    };
    let id = request.id.clone().unwrap_or(Value::Null);
    if let Err(refused) = state.served(&agent_type) {
        return answer::<Value>(id, Err(refused.into()));
    }
    let call = Call {
        state,
        principal,
        agent_type,
    };
    let params = request.params;
    match request.method.as_str() {
        methods::MESSAGE_STREAM => stream::message_stream(call, credential, id, params).await,
        methods::TASKS_RESUBSCRIBE => stream::resubscribe(call, credential, id, params).await,
        methods::MESSAGE_SEND => answer(id, call.send(&credential, params).await),
        methods::TASKS_GET => answer(id, call.get(params).await),
        methods::TASKS_CANCEL => answer(id, call.cancel(params).await),
        methods::PUSH_CONFIG_SET => answer(id, call.set_push(params).await),
        methods::PUSH_CONFIG_GET => answer(id, call.get_push(params).await),
        other => answer::<Value>(
            id,
            Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!(
                    "no method {:?} here (A2A v0.3's JSON-RPC methods)",
                    baton_core::escape::bounded(other)
                ),
            )),
        ),
    }
}

/// A method's answer as the JSON-RPC response (HTTP 200 either way, as the binding has it).
fn answer<T: Serialize>(id: Value, answered: Result<T, RpcError>) -> Response {
    let response = match answered.and_then(|result| {
        serde_json::to_value(result)
            .map_err(|error| RpcError::new(codes::INTERNAL_ERROR, error.to_string()))
    }) {
        Ok(result) => JsonRpcResponse::result(id, result),
        Err(refused) => JsonRpcResponse::error(id, refused.into_object()),
    };
    Json(response).into_response()
}

/// The request under the API's body guards: not JSON is a parse error, JSON that is no
/// JSON-RPC 2.0 request an invalid request.
async fn read_request(
    state: &A2aState,
    headers: &HeaderMap,
    body: Body,
) -> Result<JsonRpcRequest, RpcError> {
    let options = &state.app.options;
    let cap = options.submit_limits.request_body_cap();
    let value: Value =
        match crate::http::json_body(headers, body, cap, options.verbose_errors).await {
            Ok(value) => value,
            Err(HttpError::Api(error)) if error.code == ErrorCode::ValidationError => {
                return Err(RpcError::new(codes::PARSE_ERROR, error.error));
            }
            Err(HttpError::Api(error)) => return Err(error.into()),
            Err(HttpError::LengthRequired) => {
                return Err(RpcError::new(
                    codes::INVALID_REQUEST,
                    "the request needs a Content-Length header",
                ));
            }
        };
    match serde_json::from_value::<JsonRpcRequest>(value) {
        Ok(request) if request.jsonrpc == "2.0" => Ok(request),
        _ => Err(RpcError::new(
            codes::INVALID_REQUEST,
            "not a JSON-RPC 2.0 request: {jsonrpc: \"2.0\", id, method, params}",
        )),
    }
}

/// A method's parameters, decoded; `InvalidParams` naming the method otherwise.
pub(super) fn params_of<T: DeserializeOwned>(
    method: &str,
    params: Option<Value>,
) -> Result<T, RpcError> {
    serde_json::from_value(params.unwrap_or(Value::Null)).map_err(|error| {
        RpcError::invalid_params(format!(
            "the parameters are not {method}'s: {}",
            baton_core::escape::bounded(&error.to_string())
        ))
    })
}

/// One request's caller and route.
pub(super) struct Call {
    pub(super) state: A2aState,
    pub(super) principal: Principal,
    pub(super) agent_type: String,
}

/// What a message did: the task it began or answered, its context, and the stream position
/// after which the task's chunks come.
pub(super) struct Acted {
    pub(super) task_id: String,
    pub(super) session_id: String,
    pub(super) after: u64,
    /// The message answered an `input-required` task (rather than beginning one).
    pub(super) answered: bool,
}

impl Call {
    fn verbose(&self) -> bool {
        self.state.app.options.verbose_errors
    }

    /// The session of a context, the caller's (`ops::authorized_session`, the mount's check) and
    /// of the route's agent type.
    async fn context(&self, session_id: &str) -> Result<SessionState, ApiError> {
        let session =
            ops::authorized_session(&self.state.app, &self.principal, "a2a", session_id).await?;
        if session.agent_type == self.agent_type {
            Ok(session)
        } else {
            Err(ApiError::new(
                ErrorCode::NotFound,
                format!(
                    "no context {session_id} of agent type {:?}",
                    self.agent_type
                ),
            ))
        }
    }

    /// The session of a task that is its context's current turn; `TaskNotFound` otherwise.
    pub(super) async fn current_task(&self, task_id: &str) -> Result<SessionState, RpcError> {
        let session_id = task::context_of(task_id)?;
        let session = self.context(session_id).await?;
        match self.record(session_id).await?.task_id {
            Some(current) if current == task_id => Ok(session),
            Some(current) => Err(RpcError::task_not_found(format!(
                "task {task_id} is an earlier turn of context {session_id}, whose current task \
                 is {current}; only a context's current task is kept"
            ))),
            None => Err(RpcError::task_not_found(format!(
                "context {session_id} has no task begun over A2A"
            ))),
        }
    }

    /// The task as its session shows it now: its status read with the calls it waits on, and
    /// its usage when the mount serves usage.
    pub(super) async fn view(&self, task_id: &str) -> Result<Task, RpcError> {
        let session_id = task::context_of(task_id)?;
        let session = ops::session_status(&self.state.app, &self.principal, session_id).await?;
        let usage = if self.state.mount.serves_usage {
            let usage = ops::session_usage(&self.state.app, &self.principal, session_id).await?;
            Some(self.state.mount.shown_usage(&usage.rollup))
        } else {
            None
        };
        Ok(task::task_of(&session, task_id, usage))
    }

    /// The session a message is for: its task's context, its own context, or a new one.
    pub(super) fn target(&self, params: &MessageSendParams) -> Result<String, RpcError> {
        let message = &params.message;
        if let Some(task_id) = &message.task_id {
            let session_id = task::context_of(task_id)?;
            if message
                .context_id
                .as_ref()
                .is_some_and(|context| context != session_id)
            {
                return Err(RpcError::invalid_params(format!(
                    "contextId is not task {task_id}'s context"
                )));
            }
            return Ok(session_id.to_owned());
        }
        match &message.context_id {
            Some(context) if ids::is_valid_name(context) => Ok(context.clone()),
            Some(_) => Err(RpcError::invalid_params(
                "contextId must be 1 to 64 characters of letters, digits, - and _ (no __)",
            )),
            None => Ok(format!("a2a-{}", uuid::Uuid::new_v4().simple())),
        }
    }

    /// What `message/send` and `message/stream` do: answer the task the message names, or
    /// begin the next task of its context (a new context if it names none or one that does not
    /// exist yet). Every check is made before the first write.
    pub(super) async fn act(
        &self,
        params: &MessageSendParams,
        session_id: &str,
    ) -> Result<Acted, RpcError> {
        if let Some(task_id) = &params.message.task_id {
            return self.answer_task(params, task_id).await;
        }
        let text = task::turn_text(&params.message)?;
        if let Some(push) = push_config_of(params) {
            self.check_push(push)?;
        }
        let acted = match self.context(session_id).await {
            Ok(session) => self.next_turn(session, text).await?,
            Err(missing) if missing.code == ErrorCode::SessionNotFound => {
                let start = remote::StartRequest::new(session_id, text);
                let started = ops::start_or_attach(
                    &self.state.app,
                    &self.principal,
                    &self.agent_type,
                    &start,
                )
                .await?;
                self.begun(&started.session_id, &started.run_id, 0).await?
            }
            Err(refused) => return Err(refused.into()),
        };
        if let Some(push) = push_config_of(params) {
            self.record_push(&acted, push).await?;
        }
        Ok(acted)
    }

    /// The next turn of a context whose last turn has ended: the API's resume `with_message`.
    async fn next_turn(&self, session: SessionState, text: String) -> Result<Acted, RpcError> {
        let waiting = match session.status {
            Status::SuspendedClientTool => Some("waits for input: answer it on its taskId"),
            Status::Active => Some("is working"),
            _ => None,
        };
        if let Some(waiting) = waiting {
            let current = self.recorded_task(&session.session_id).await?;
            return Err(RpcError::invalid_params(format!(
                "context {}'s current task {} {waiting}, or cancel it (tasks/cancel) first",
                session.session_id,
                current.as_deref().unwrap_or("(begun outside A2A)")
            )));
        }
        let after = session.last_sequence;
        let resumed = ops::resume(
            &self.state.app,
            &self.principal,
            ResumeRequest {
                session_id: session.session_id.clone(),
                mode: ResumeMode::WithMessage,
                message: Some(text),
                abandon_pending: false,
                checkpoint_id: None,
            },
        )
        .await?;
        self.begun(&session.session_id, &resumed.run_id, after)
            .await
    }

    /// Records the task a turn begun by `run_id` is, as its context's current one.
    async fn begun(&self, session_id: &str, run_id: &str, after: u64) -> Result<Acted, RpcError> {
        let task_id = task::task_id(session_id, run_id);
        self.state
            .app
            .store
            .record_a2a_task(&SessionAddress::root(session_id), &task_id)
            .await
            .map_err(ApiError::from)?;
        Ok(Acted {
            task_id,
            session_id: session_id.to_owned(),
            after,
            answered: false,
        })
    }

    async fn recorded_task(&self, session_id: &str) -> Result<Option<String>, RpcError> {
        Ok(self.record(session_id).await?.task_id)
    }

    /// What the context's session holds of A2A (its current task, its push configuration).
    async fn record(&self, session_id: &str) -> Result<A2aRecord, RpcError> {
        Ok(self
            .state
            .app
            .store
            .a2a_record(&SessionAddress::root(session_id))
            .await
            .map_err(ApiError::from)?)
    }

    /// The client's answers to an `input-required` task: the API's submit of each data part,
    /// in order (the first refused stops the rest, and writes nothing of its own), then, when
    /// the batch is complete and the server does not resume by itself, the API's resume.
    async fn answer_task(
        &self,
        params: &MessageSendParams,
        task_id: &str,
    ) -> Result<Acted, RpcError> {
        let session = self.current_task(task_id).await?;
        // Its state as `tasks/get` shows it: with the calls (and questions) waiting on a person.
        let state = self.view(task_id).await?.status.state;
        if state != TaskState::InputRequired {
            let word = serde_json::to_value(state).unwrap_or(Value::Null);
            let next = if state.is_terminal() {
                format!(
                    "; a message without taskId in context {} begins its next task",
                    session.session_id
                )
            } else {
                "; it takes answers only while input-required".to_owned()
            };
            return Err(RpcError::invalid_params(format!(
                "task {task_id} is {word}{next}"
            )));
        }
        let submits = task::answers(&params.message, &session.session_id, self.verbose())?;
        if let Some(push) = push_config_of(params) {
            self.check_push(push)?;
        }
        let mut continuation = Continuation::AwaitingBatch;
        for submit in submits {
            continuation = ops::submit(&self.state.app, &self.principal, submit)
                .await?
                .continuation;
        }
        if continuation == Continuation::CallerResumes {
            let resumed = ops::resume(
                &self.state.app,
                &self.principal,
                ResumeRequest {
                    session_id: session.session_id.clone(),
                    mode: ResumeMode::Continue,
                    message: None,
                    abandon_pending: false,
                    checkpoint_id: None,
                },
            )
            .await;
            match resumed {
                // Another caller (or the deadline) resumed it first: the task goes on all the same.
                Err(error) if error.code == ErrorCode::StateAlreadyRunning => {}
                other => {
                    other?;
                }
            }
        }
        let acted = Acted {
            task_id: task_id.to_owned(),
            session_id: session.session_id.clone(),
            after: session.last_sequence,
            answered: true,
        };
        if let Some(push) = push_config_of(params) {
            self.record_push(&acted, push).await?;
        }
        Ok(acted)
    }

    /// `message/send`: what the message did, then the task once its turn has ended or waits on
    /// the client (`blocking`, the default), or at once.
    async fn send(
        &self,
        credential: &Credential,
        params: Option<Value>,
    ) -> Result<Event, RpcError> {
        let params: MessageSendParams = params_of(methods::MESSAGE_SEND, params)?;
        let session_id = self.target(&params)?;
        let blocking = params
            .configuration
            .as_ref()
            .and_then(|configuration| configuration.blocking)
            .unwrap_or(true);
        // The follower's place is taken before anything is written.
        let permit = blocking
            .then(|| ops::admit_follower(&self.state.app, &session_id, credential))
            .transpose()?;
        let acted = self.act(&params, &session_id).await?;
        if let Some(permit) = permit {
            stream::wait_for_turn(self, permit, &acted).await?;
        }
        Ok(Event::Task(self.view(&acted.task_id).await?))
    }

    /// `tasks/get`: the current task of its context, as it is now.
    async fn get(&self, params: Option<Value>) -> Result<Event, RpcError> {
        let params: TaskQueryParams = params_of(methods::TASKS_GET, params)?;
        self.current_task(&params.id).await?;
        Ok(Event::Task(self.view(&params.id).await?))
    }

    /// `tasks/cancel`: the API's interrupt of the task's session (`canceled`); a task that has
    /// ended is `TaskNotCancelable`.
    async fn cancel(&self, params: Option<Value>) -> Result<Event, RpcError> {
        let params: TaskIdParams = params_of(methods::TASKS_CANCEL, params)?;
        let session = self.current_task(&params.id).await?;
        let state = task::state_of(&session);
        if state.is_terminal() {
            let word = serde_json::to_value(state).unwrap_or(Value::Null);
            return Err(RpcError::new(
                codes::TASK_NOT_CANCELABLE,
                format!("task {} is {word}: there is nothing to cancel", params.id),
            ));
        }
        ops::stop(
            &self.state.app,
            &self.principal,
            &session.session_id,
            StopKind::Interrupt,
        )
        .await
        .map_err(|refused| {
            let not_running = refused.code == ErrorCode::RunNotActive
                || refused.code == ErrorCode::StateNotResumable;
            let refused = RpcError::from(refused);
            if not_running {
                refused.with_code(codes::TASK_NOT_CANCELABLE)
            } else {
                refused
            }
        })?;
        Ok(Event::Task(self.view(&params.id).await?))
    }

    /// `tasks/pushNotificationConfig/set`: the configuration, checked (an `http(s)` URL whose
    /// host the server lists in `--callback-hosts`), kept with the session.
    async fn set_push(
        &self,
        params: Option<Value>,
    ) -> Result<TaskPushNotificationConfig, RpcError> {
        let params: TaskPushNotificationConfig = params_of(methods::PUSH_CONFIG_SET, params)?;
        let session = self.current_task(&params.task_id).await?;
        self.check_push(&params.push_notification_config)?;
        let acted = Acted {
            task_id: params.task_id.clone(),
            session_id: session.session_id,
            after: 0,
            answered: false,
        };
        self.record_push(&acted, &params.push_notification_config)
            .await
    }

    /// `tasks/pushNotificationConfig/get`: the configuration set on the task.
    async fn get_push(
        &self,
        params: Option<Value>,
    ) -> Result<TaskPushNotificationConfig, RpcError> {
        let params: GetTaskPushNotificationConfigParams =
            params_of(methods::PUSH_CONFIG_GET, params)?;
        let session = self.current_task(&params.id).await?;
        let record = self.record(&session.session_id).await?;
        let stored: Option<TaskPushNotificationConfig> = record
            .push_config
            .and_then(|json| serde_json::from_str(&json).ok())
            .filter(|config: &TaskPushNotificationConfig| config.task_id == params.id);
        match stored {
            Some(config)
                if params.push_notification_config_id.is_none()
                    || params.push_notification_config_id == config.push_notification_config.id =>
            {
                Ok(config)
            }
            _ => Err(RpcError::invalid_params(format!(
                "task {} has no such push notification config",
                params.id
            ))),
        }
    }

    /// Refuses a push configuration the server would not call: a URL that is not `http(s)`,
    /// too long, or whose host is off `--callback-hosts` (the callbacks' list).
    fn check_push(&self, config: &PushNotificationConfig) -> Result<(), RpcError> {
        let url = &config.url;
        if !(url.starts_with("http://") || url.starts_with("https://"))
            || url.len() > remote::MAX_CALLBACK_URL_BYTES
        {
            return Err(RpcError::invalid_params(
                "pushNotificationConfig.url must be an http(s) URL of at most 2048 bytes",
            ));
        }
        let callback = remote::Callback {
            url: url.clone(),
            token: String::new(),
        };
        ops::check_callback_host(&self.state.app.options.callback_hosts, Some(&callback))?;
        Ok(())
    }

    /// Keeps the push configuration of the acted-on task with its session (its `id` defaults to
    /// the task's), and answers it.
    async fn record_push(
        &self,
        acted: &Acted,
        config: &PushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, RpcError> {
        let mut config = config.clone();
        config.id.get_or_insert_with(|| acted.task_id.clone());
        let stored = TaskPushNotificationConfig {
            task_id: acted.task_id.clone(),
            push_notification_config: config,
        };
        let json = serde_json::to_string(&stored)
            .map_err(|error| RpcError::new(codes::INTERNAL_ERROR, error.to_string()))?;
        let address = SessionAddress::root(&acted.session_id);
        let store = &self.state.app.store;
        store
            .record_a2a_push(&address, &json)
            .await
            .map_err(ApiError::from)?;
        // The callback sweep POSTs the task there at each of its turn's ends.
        store
            .index_callback(&address, 0)
            .await
            .map_err(ApiError::from)?;
        Ok(stored)
    }
}

fn push_config_of(params: &MessageSendParams) -> Option<&PushNotificationConfig> {
    params
        .configuration
        .as_ref()
        .and_then(|configuration| configuration.push_notification_config.as_ref())
}

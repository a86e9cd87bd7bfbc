//! The HTTP server: start a session, follow its stream, read its status. Every handler answers
//! from Redis or by starting a workflow; none waits on a run.

use crate::auth::{Auth, Principal};
use axum::{
    Extension, Json, Router,
    extract::{FromRequest, FromRequestParts, Query, State},
    http::StatusCode,
    response::{
        IntoResponse, Response,
        sse::{Event, KeepAlive, Sse},
    },
    routing::{get, post},
};
use baton_activities::io::{ActivityPolicy, DeadlineInput, RunInput};
use baton_core::{
    Agent, AgentRegistry, ApiError, ErrorCode, Message, Store,
    api::{
        ResumeMode, ResumeRequest, ResumeResponse, SessionRequest, SnapshotResponse, StartRequest,
        StartResponse, StopResponse, UsageResponse,
    },
    chunk::{ChunkKind, RunError, StreamChunk},
    ids,
    store::{
        self, Claim, Continuation, NewRun, NewSession, ResumeEntry, Rewound, RunRef,
        SessionAddress, SessionState, Status, StopKind, Stopped,
    },
    submit::{
        Submission, SubmitAnswer, SubmitLimits, parse_submission, payload_too_large,
        submit_tool_result,
    },
};
use baton_workflows::{AgentRunWorkflow, DeadlineWorkflow};
use futures::{Stream, StreamExt, stream};
use serde::Deserialize;
use std::convert::Infallible;
use temporalio_client::{Client, WorkflowIdReusePolicy, WorkflowStartOptions};

/// Largest user message `/start` accepts, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// What every handler shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub registry: AgentRegistry,
    pub temporal: Client,
    pub task_queue: String,
    pub policy: ActivityPolicy,
    pub options: ServerOptions,
    /// The stream feeds SSE followers share.
    pub streams: crate::fanout::StreamHub,
    pub metrics: crate::metrics::Metrics,
}

/// How the server treats requests; `Default` is what `batond` runs with when given no flags
/// (which, without auth, it refuses to serve).
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub submit_limits: SubmitLimits,
    /// Put validation details in `validation_error` and `INVALID_RESULT` answers.
    pub verbose_errors: bool,
    /// Resume a session by itself when a submit completes its batch (continuation `new_run`)
    /// instead of leaving that to the caller (`caller_resumes`).
    pub resume_on_submit: bool,
    /// Who may call; [`Auth::Unset`] (the default) serves nothing.
    pub auth: Auth,
    /// Submits per minute and session (a token bucket in Redis); `None` is unlimited.
    pub submits_per_minute: Option<u32>,
    /// Operators may name the session `/start` creates (`sessionId`); otherwise ids are the
    /// server's own.
    pub allow_client_session_ids: bool,
    /// Chunks a session's stream keeps (the oldest are trimmed); 0 keeps all. Apply it to the
    /// store with [`Store::with_stream_max_chunks`] (`AppState` users do).
    pub stream_max_chunks: u64,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            submit_limits: SubmitLimits::default(),
            verbose_errors: false,
            resume_on_submit: false,
            auth: Auth::Unset,
            submits_per_minute: Some(DEFAULT_SUBMITS_PER_MINUTE),
            stream_max_chunks: DEFAULT_STREAM_MAX_CHUNKS,
            allow_client_session_ids: false,
        }
    }
}

/// How many chunks a session's stream keeps by default.
pub const DEFAULT_STREAM_MAX_CHUNKS: u64 = 100_000;

/// The default submit rate limit per session.
pub const DEFAULT_SUBMITS_PER_MINUTE: u32 = 60;

/// Serves the API on `listener` until `shutdown` resolves, then drains open requests. Small
/// writes (SSE events) go out at once: Nagle's algorithm would hold them for the peer's delayed
/// ACK (~40 ms).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::serve::ListenerExt;
    match state.options.auth {
        Auth::Unset => {
            return Err(std::io::Error::other(
                "refusing to serve the Baton API without authentication: configure API keys \
                 (--api-key) or pass --allow-unauthenticated",
            ));
        }
        Auth::AllowUnauthenticated => tracing::warn!(
            "the Baton HTTP API is serving WITHOUT authentication (--allow-unauthenticated): \
             anyone who reaches it can start, read and steer sessions"
        ),
        Auth::Builtin(_) | Auth::Custom(_) => {}
    }
    let listener = listener.tap_io(|stream| {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY could not be set");
        }
    });
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
}

/// The HTTP API. Every route but `/healthz` authenticates first (401 before anything is read).
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/start", post(start))
        .route("/status", get(status))
        .route("/sse", get(sse))
        .route("/submit-tool-result", post(submit))
        .route("/resume", post(resume))
        .route("/interrupt", post(interrupt))
        .route("/abort", post(abort))
        .route("/snapshot", get(snapshot))
        .route("/usage", get(usage))
        .route("/metrics", get(metrics))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            authenticate,
        ))
        .route("/healthz", get(|| async { "ok" }))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), measure))
        .with_state(state)
}

/// Counts each request by route and status, and times it.
async fn measure(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let metrics = &state.metrics;
    metrics
        .latency
        .with_label_values(&[route.as_str()])
        .observe(started.elapsed().as_secs_f64());
    metrics
        .requests
        .with_label_values(&[route.as_str(), response.status().as_str()])
        .inc();
    response
}

/// `GET /metrics`: Prometheus text, for operators.
async fn metrics(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
) -> Result<Response, HttpError> {
    principal.must_be_operator()?;
    let text = state.metrics.render(&[(
        "baton_stream_feeds",
        "Sessions whose stream this server reads for its followers",
        state.streams.feed_count() as f64,
    )]);
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

/// Puts the request's [`Principal`] in its extensions, or answers 401.
async fn authenticate(
    State(state): State<AppState>,
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match state.options.auth.authenticate(request.headers()).await {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(error) => HttpError::from(error).into_response(),
    }
}

/// Starts a session: checks the request, writes the session and its first run to Redis, then
/// starts the run's workflow. A refused request writes nothing.
pub async fn start_session(
    state: &AppState,
    request: StartRequest,
) -> Result<StartResponse, ApiError> {
    let agent = state.registry.get(&request.agent).ok_or_else(|| {
        let known: Vec<&str> = state.registry.agent_types().collect();
        ApiError::new(
            ErrorCode::UnknownAgentType,
            format!(
                "unknown agent type {:?}; this server has: {}",
                request.agent,
                known.join(", ")
            ),
        )
    })?;
    let user_message = checked_message(request.message)?;

    let chosen = request.session_id.is_some();
    let session_id = match request.session_id {
        Some(chosen) => {
            checked_address(&chosen)?;
            chosen
        }
        None => ids::new_session_id(),
    };
    let run_id = ids::new_run_id();
    let stream_id = ids::new_session_id();
    let address = SessionAddress::root(&session_id);
    let workflow_id = ids::first_run_workflow_id(agent.name(), &session_id);
    if chosen && workflow_exists(state, &workflow_id).await? {
        // An earlier session of this id (its Redis state gone or under another prefix): its
        // workflow id is taken, so refuse before writing anything.
        return Err(ApiError::new(
            ErrorCode::SessionAlreadyExists,
            format!("session {session_id} was used before (its workflow {workflow_id} exists)"),
        ));
    }
    let mut messages = Vec::with_capacity(2);
    if !agent.system_prompt().is_empty() {
        messages.push(Message::system(agent.system_prompt()));
    }
    messages.push(Message::user(user_message));
    state
        .store
        .create_session(NewSession {
            address: &address,
            agent_type: agent.name(),
            run_id: &run_id,
            stream_id: &stream_id,
            workflow_id: &workflow_id,
            messages: &messages,
        })
        .await
        .map_err(store_error)?;

    let input = RunInput {
        address,
        agent_type: agent.name().to_owned(),
        run_id: run_id.clone(),
        stream_id: stream_id.clone(),
        first_step: 0,
        max_steps: agent.max_steps(),
        policy: state.policy.clone(),
        resume: false,
    };
    start_run_workflow(state, &workflow_id, input).await?;
    tracing::info!(%session_id, agent = agent.name(), %workflow_id, "session started");
    Ok(StartResponse {
        session_id,
        run_id,
        workflow_id,
        stream_id,
        token: None,
    })
}

/// A user message as `/start` and `/resume` accept it: not blank, at most [`MAX_MESSAGE_BYTES`].
fn checked_message(message: String) -> Result<String, ApiError> {
    if message.trim().is_empty() {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            "message must not be empty",
        ));
    }
    if message.len() > MAX_MESSAGE_BYTES {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            format!(
                "message is {} bytes; the limit is {MAX_MESSAGE_BYTES}",
                message.len()
            ),
        ));
    }
    Ok(message)
}

/// Starts the workflow of a run that Redis already holds. If Temporal refuses, the run is
/// recorded as failed (`temporal_unavailable`) so status and stream say why nothing runs.
async fn start_run_workflow(
    state: &AppState,
    workflow_id: &str,
    input: RunInput,
) -> Result<(), ApiError> {
    let options = WorkflowStartOptions::new(state.task_queue.clone(), workflow_id.to_owned())
        .id_reuse_policy(WorkflowIdReusePolicy::RejectDuplicate)
        .build();
    let (address, stream_id, run_id) = (
        input.address.clone(),
        input.stream_id.clone(),
        input.run_id.clone(),
    );
    let Err(error) = state
        .temporal
        .start_workflow(AgentRunWorkflow::run, input, options)
        .await
    else {
        return Ok(());
    };
    let session_id = &address.session_id;
    tracing::error!(%session_id, %error, "starting the run's workflow failed");
    let run_error = RunError {
        code: ErrorCode::TemporalUnavailable,
        message: "the run could not be started".to_owned(),
    };
    if let Err(store_error) = state
        .store
        .fail_run(
            RunRef {
                address: &address,
                stream_id: &stream_id,
                run_id: &run_id,
            },
            &run_error,
            Default::default(),
        )
        .await
    {
        tracing::error!(%session_id, %store_error, "recording the failed start failed too");
    }
    Err(ApiError::new(
        run_error.code,
        format!("{}: {error}", run_error.message),
    ))
}

/// Resumes a suspended session: claims it for a new run in one script (refusing a running
/// session and a batch with calls still awaited, writing nothing), then starts the run's
/// workflow `agent__<type>__<session>__resume-<runId>`, which drains the answers first.
pub async fn resume_session(
    state: &AppState,
    request: ResumeRequest,
) -> Result<ResumeResponse, ApiError> {
    let refuse = |message: &str| Err(ApiError::new(ErrorCode::ValidationError, message));
    if request.mode != ResumeMode::FromCheckpoint && request.checkpoint_id.is_some() {
        return refuse("checkpointId goes with mode from_checkpoint only");
    }
    let message = match (request.mode, request.message) {
        (ResumeMode::Continue, None) if !request.abandon_pending => None,
        (ResumeMode::Continue, _) => {
            return refuse(
                "mode continue takes no message and no abandonPending; use with_message",
            );
        }
        (ResumeMode::WithMessage, None) => return refuse("mode with_message needs a message"),
        (ResumeMode::FromCheckpoint, None) if request.abandon_pending => {
            return refuse("abandonPending goes with a message");
        }
        (_, message) => message.map(checked_message).transpose()?,
    };
    let entry = ResumeEntry {
        message: message.map(Message::user),
        abandon_pending: request.abandon_pending,
        expected_run_id: None,
    };
    let session = existing_session(state, &request.session_id).await?;
    let agent = state.registry.get(&session.agent_type).ok_or_else(|| {
        ApiError::new(
            ErrorCode::UnknownAgentType,
            format!("this server has no agent type {:?}", session.agent_type),
        )
    })?;
    let address = SessionAddress {
        root_session_id: session.root_session_id.clone(),
        session_id: session.session_id.clone(),
    };
    let run_id = ids::new_run_id();
    let workflow_id = ids::resume_workflow_id(agent.name(), &session.session_id, &run_id);
    if request.mode == ResumeMode::FromCheckpoint {
        let checkpoint_id = request.checkpoint_id.ok_or_else(|| {
            ApiError::new(
                ErrorCode::ValidationError,
                "mode from_checkpoint needs a checkpointId",
            )
        })?;
        let rewind = RewindRequest {
            session: &session,
            agent,
            address,
            run_id,
            workflow_id,
            checkpoint_id,
            entry,
        };
        return rewind_session(state, rewind).await;
    }
    let claim = state
        .store
        .claim_resume(
            &address,
            NewRun {
                agent_type: agent.name(),
                stream_id: &session.stream_id,
                run_id: &run_id,
                workflow_id: &workflow_id,
            },
            &entry,
        )
        .await
        .map_err(store_error)?;
    let step_count = match claim {
        Claim::Claimed { step_count } => step_count,
        Claim::SessionNotFound => return Err(no_session(&request.session_id)),
        Claim::AlreadyRunning => {
            return Err(ApiError::new(
                ErrorCode::StateAlreadyRunning,
                "a run of this session is executing",
            ));
        }
        Claim::Awaiting { tool_call_ids } => {
            return Err(ApiError::new(
                ErrorCode::StateNotResumable,
                format!(
                    "calls still awaited, answer them first: {}",
                    tool_call_ids.join(", ")
                ),
            )
            .with("awaitedToolCallIds", tool_call_ids));
        }
        Claim::NotResumable { status } => {
            return Err(ApiError::new(
                ErrorCode::StateNotResumable,
                format!("the session is {status}; there is nothing to continue"),
            ));
        }
    };
    let input = RunInput {
        address,
        agent_type: agent.name().to_owned(),
        run_id: run_id.clone(),
        stream_id: session.stream_id.clone(),
        first_step: step_count,
        max_steps: agent.max_steps(),
        policy: state.policy.clone(),
        resume: true,
    };
    start_run_workflow(state, &workflow_id, input).await?;
    tracing::info!(session_id = %session.session_id, %workflow_id, "session resumed");
    Ok(ResumeResponse {
        session_id: session.session_id,
        run_id,
        workflow_id: Some(workflow_id),
        status: Status::Active,
    })
}

/// A `from_checkpoint` resume, its session found and its request checked.
struct RewindRequest<'a> {
    session: &'a SessionState,
    agent: &'a Agent,
    address: SessionAddress,
    run_id: String,
    workflow_id: String,
    checkpoint_id: u32,
    entry: ResumeEntry,
}

/// Rewinds a session to a checkpoint for a new run (one script; a refusal writes nothing). A
/// checkpoint whose step suspended hands its calls to the new run, which awaits them at once
/// (leaving a deadline workflow if the agent resumes by itself) unless the message abandons
/// them; otherwise the run's workflow starts and calls the model.
async fn rewind_session(
    state: &AppState,
    request: RewindRequest<'_>,
) -> Result<ResumeResponse, ApiError> {
    let RewindRequest {
        session,
        agent,
        address,
        run_id,
        workflow_id,
        checkpoint_id,
        entry,
    } = request;
    let not_found = || {
        ApiError::new(
            ErrorCode::CheckpointNotFound,
            format!(
                "session {} has no checkpoint {checkpoint_id}",
                session.session_id
            ),
        )
    };
    let checkpoint = state
        .store
        .checkpoint(&address, checkpoint_id)
        .await
        .map_err(store_error)?
        .ok_or_else(not_found)?;
    if entry.message.is_some() && !entry.abandon_pending && !checkpoint.pending.is_empty() {
        let awaited: Vec<&str> = checkpoint
            .pending
            .iter()
            .map(|c| c.tool_call_id.as_str())
            .collect();
        return Err(ApiError::new(
            ErrorCode::StateNotResumable,
            format!(
                "checkpoint {checkpoint_id} awaits calls ({}); rewind without a message, or \
                 abandon them with abandonPending",
                awaited.join(", ")
            ),
        )
        .with("awaitedToolCallIds", awaited));
    }
    let rewound = state
        .store
        .rewind(
            &address,
            store::Rewind {
                agent_type: agent.name(),
                stream_id: &session.stream_id,
                new_run_id: &run_id,
                workflow_id: &workflow_id,
                checkpoint: &checkpoint,
                message: entry.message,
                abandon_pending: entry.abandon_pending,
            },
        )
        .await
        .map_err(store_error)?;
    let input = |first_step| RunInput {
        address: address.clone(),
        agent_type: agent.name().to_owned(),
        run_id: run_id.clone(),
        stream_id: session.stream_id.clone(),
        first_step,
        max_steps: agent.max_steps(),
        policy: state.policy.clone(),
        resume: true,
    };
    let session_id = &session.session_id;
    match rewound {
        Rewound::Run { step_count } => {
            start_run_workflow(state, &workflow_id, input(step_count)).await?;
            tracing::info!(%session_id, checkpoint_id, %workflow_id, "session rewound");
            Ok(ResumeResponse {
                session_id: session_id.clone(),
                run_id,
                workflow_id: Some(workflow_id),
                status: Status::Active,
            })
        }
        Rewound::Suspended {
            step_count,
            pending,
        } => {
            let wake_at = pending.iter().map(|call| call.deadline_at).min();
            if let Some(wake_at) = wake_at.filter(|_| agent.resume_on_deadline()) {
                start_deadline_workflow(state, input(step_count), wake_at).await?;
            }
            tracing::info!(%session_id, checkpoint_id, "session rewound to a suspension");
            Ok(ResumeResponse {
                session_id: session_id.clone(),
                run_id,
                workflow_id: None,
                status: Status::SuspendedClientTool,
            })
        }
        Rewound::SessionNotFound => Err(no_session(session_id)),
        Rewound::AlreadyRunning => Err(ApiError::new(
            ErrorCode::StateAlreadyRunning,
            "a run of this session is executing",
        )),
        Rewound::UnknownCheckpoint => Err(not_found()),
    }
}

/// Starts the deadline workflow of a run that suspended without a workflow of its own. The
/// suspension is already durable, so a failure here is reported but nothing is undone: the calls
/// can still be answered and the session resumed by hand.
async fn start_deadline_workflow(
    state: &AppState,
    run: RunInput,
    wake_at: u64,
) -> Result<(), ApiError> {
    let workflow_id = run.deadline_workflow_id();
    let options = WorkflowStartOptions::new(state.task_queue.clone(), workflow_id.clone())
        .id_reuse_policy(WorkflowIdReusePolicy::RejectDuplicate)
        .build();
    state
        .temporal
        .start_workflow(
            DeadlineWorkflow::run,
            DeadlineInput { run, wake_at },
            options,
        )
        .await
        .map(|_| ())
        .map_err(|error| {
            tracing::error!(%workflow_id, %error, "starting the deadline workflow failed");
            ApiError::new(
                ErrorCode::TemporalUnavailable,
                format!("the deadline workflow did not start: {error}"),
            )
        })
}

async fn resume(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(request): ApiJson<ResumeRequest>,
) -> Result<Json<ResumeResponse>, HttpError> {
    principal.may_act_on(&request.session_id)?;
    Ok(Json(resume_session(&state, request).await?))
}

/// Stops the session's current run: a durable stop record first (one script, which also ends the
/// run in Redis), then Temporal cancellation of its workflow if one is still running.
pub async fn stop_session(
    state: &AppState,
    session_id: &str,
    kind: StopKind,
) -> Result<StopResponse, ApiError> {
    let session = existing_session(state, session_id).await?;
    let address = SessionAddress {
        root_session_id: session.root_session_id.clone(),
        session_id: session.session_id.clone(),
    };
    let run_id = match state
        .store
        .stop_run(&address, kind)
        .await
        .map_err(store_error)?
    {
        Stopped::Stopped { run_id } => run_id,
        Stopped::SessionNotFound => return Err(no_session(session_id)),
        Stopped::NotRunning { status } => {
            return Err(ApiError::new(
                ErrorCode::RunNotActive,
                format!("the session is {status}; no run to stop"),
            ));
        }
    };
    if let Some(workflow_id) = &session.workflow_id {
        // A suspended run has no workflow left; any other outcome is logged, not fatal: the stop
        // is recorded, so the run's own writes are refused from now on.
        let handle = state
            .temporal
            .get_workflow_handle::<AgentRunWorkflow>(workflow_id.clone());
        if let Err(error) = handle.cancel(Default::default()).await {
            tracing::debug!(%workflow_id, %error, "cancelling the stopped run's workflow");
        }
    }
    tracing::info!(%session_id, %run_id, ?kind, "run stopped");
    let status = state
        .store
        .session(&address)
        .await
        .map_err(store_error)?
        .map_or(Status::Failed, |s| s.status);
    Ok(StopResponse {
        session_id: session.session_id,
        run_id,
        status,
    })
}

async fn interrupt(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(request): ApiJson<SessionRequest>,
) -> Result<Json<StopResponse>, HttpError> {
    principal.may_act_on(&request.session_id)?;
    Ok(Json(
        stop_session(&state, &request.session_id, StopKind::Interrupt).await?,
    ))
}

async fn abort(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(request): ApiJson<SessionRequest>,
) -> Result<Json<StopResponse>, HttpError> {
    principal.may_act_on(&request.session_id)?;
    Ok(Json(
        stop_session(&state, &request.session_id, StopKind::Abort).await?,
    ))
}

/// `/start` is for operators; with built-in auth the answer carries the new session's token.
async fn start(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiJson(request): ApiJson<StartRequest>,
) -> Result<Json<StartResponse>, HttpError> {
    principal.must_be_operator()?;
    Ok(Json(checked_start(&state, request).await?))
}

/// An operator's start: a client-chosen session id only where the server allows it, then the
/// session, and with built-in auth the new session's token. Both transports call it.
pub async fn checked_start(
    state: &AppState,
    request: StartRequest,
) -> Result<StartResponse, ApiError> {
    if request.session_id.is_some() && !state.options.allow_client_session_ids {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            "sessionId is chosen by the server; this server does not take one from clients",
        ));
    }
    let mut started = start_session(state, request).await?;
    started.token = state.options.auth.token_for(&started.session_id);
    Ok(started)
}

/// `POST /submit-tool-result`: the body is bounded before it is read (411 without a length when
/// chunked, 413 over the guard), then parsed and stored (see `baton_core::submit`).
async fn submit(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> Result<Json<SubmitAnswer>, HttpError> {
    let cap = state.options.submit_limits.request_body_cap();
    let bytes = bounded_body(&headers, body, cap).await?;
    Ok(Json(checked_submit(&state, &principal, &bytes).await?))
}

/// A submit body from its bytes to its answer: parsed, authorized, rate-limited, stored, and
/// counted by answer. Both transports call it once the body is bounded.
pub async fn checked_submit(
    state: &AppState,
    principal: &Principal,
    bytes: &[u8],
) -> Result<SubmitAnswer, ApiError> {
    let answer = async {
        let submission = parse_submission(bytes, state.options.verbose_errors)?;
        principal.may_act_on(&submission.session_id)?;
        take_submit_token(state, &submission.session_id).await?;
        submit_and_continue(state, submission).await
    }
    .await;
    let label = match &answer {
        Ok(answer) => match answer.status {
            baton_core::submit::SubmitStatus::Accepted => "accepted",
            baton_core::submit::SubmitStatus::AlreadyCompleted => "already_completed",
        },
        Err(error) => error.code.as_str(),
    };
    state.metrics.submits.with_label_values(&[label]).inc();
    answer
}

/// Takes one submit from the session's rate limit, or refuses (429 `rate_limited` with
/// `retryAfter`).
async fn take_submit_token(state: &AppState, session_id: &str) -> Result<(), ApiError> {
    let Some(per_minute) = state.options.submits_per_minute else {
        return Ok(());
    };
    let address = SessionAddress::root(session_id);
    let wait = state
        .store
        .take_submit_token(&address, per_minute)
        .await
        .map_err(store_error)?;
    match wait {
        None => Ok(()),
        Some(wait) => {
            let retry_after = wait.as_secs_f64().ceil().max(1.0) as u64;
            Err(ApiError::new(
                ErrorCode::RateLimited,
                format!("more than {per_minute} submits a minute on this session"),
            )
            .with("retryAfter", retry_after))
        }
    }
}

/// Deepest JSON nesting a request body may have.
pub const MAX_JSON_DEPTH: usize = 64;

/// Reads a request body under the guards every JSON route shares, before any parsing: a chunked
/// body without a length is refused (411), a declared or actual length over `cap` is refused
/// (413, `cause: request_body`) without reading it, and nesting deeper than [`MAX_JSON_DEPTH`]
/// is refused (400).
async fn bounded_body(
    headers: &axum::http::HeaderMap,
    body: axum::body::Body,
    cap: usize,
) -> Result<axum::body::Bytes, ApiError> {
    use axum::http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    match declared {
        None if headers.contains_key(TRANSFER_ENCODING) => {
            return Err(ApiError::new(
                ErrorCode::ValidationError,
                "the request needs a Content-Length header",
            )
            .with("cause", "length_required"));
        }
        Some(length) if length > cap => {
            return Err(payload_too_large("request_body", cap, length));
        }
        _ => {}
    }
    let bytes = axum::body::to_bytes(body, cap)
        .await
        .map_err(|_| payload_too_large("request_body", cap, cap + 1))?;
    checked_json_depth(&bytes)?;
    Ok(bytes)
}

/// Refuses (400, `cause: json_depth`) a JSON text nesting deeper than [`MAX_JSON_DEPTH`].
pub fn checked_json_depth(bytes: &[u8]) -> Result<(), ApiError> {
    if json_depth(bytes) > MAX_JSON_DEPTH {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            format!("the body nests JSON deeper than {MAX_JSON_DEPTH} levels"),
        )
        .with("cause", "json_depth")
        .with("limitDepth", MAX_JSON_DEPTH));
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

/// Stores a client's answer (see `baton_core::submit`); when the answer completes its batch and
/// the server resumes by itself, also resumes the session and answers `new_run`. A resume that
/// loses to another entry answers `consumed`: that entry drains the answer.
pub async fn submit_and_continue(
    state: &AppState,
    submission: Submission,
) -> Result<SubmitAnswer, ApiError> {
    let session_id = submission.session_id.clone();
    let mut answer = submit_tool_result(
        &state.store,
        &state.registry,
        state.options.submit_limits,
        submission,
        state.options.verbose_errors,
    )
    .await?;
    if !state.options.resume_on_submit || answer.continuation != Continuation::CallerResumes {
        return Ok(answer);
    }
    let request = ResumeRequest {
        session_id,
        mode: ResumeMode::Continue,
        message: None,
        abandon_pending: false,
        checkpoint_id: None,
    };
    answer.continuation = match resume_session(state, request).await {
        Ok(resumed) => Continuation::NewRun {
            run_id: resumed.run_id,
        },
        Err(error) if error.code == ErrorCode::StateAlreadyRunning => Continuation::Consumed,
        Err(error) => return Err(error),
    };
    Ok(answer)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionQuery {
    session_id: String,
    /// Exclusive: the stream starts after this sequence.
    #[serde(default)]
    from_sequence: u64,
}

async fn status(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiQuery(query): ApiQuery<SessionQuery>,
) -> Result<Json<SessionState>, HttpError> {
    principal.may_act_on(&query.session_id)?;
    Ok(Json(session_status(&state, &query.session_id).await?))
}

/// The session's state, with `isExecuting` from Temporal's view of its run.
pub async fn session_status(state: &AppState, session_id: &str) -> Result<SessionState, ApiError> {
    let mut session = existing_session(state, session_id).await?;
    session.is_executing = Some(is_executing(state, &session).await?);
    Ok(session)
}

/// Whether Temporal knows a workflow of this id, in any state.
async fn workflow_exists(state: &AppState, workflow_id: &str) -> Result<bool, ApiError> {
    Ok(workflow_status(state, workflow_id).await?.is_some())
}

/// The status of a workflow, `None` if Temporal has none of that id.
async fn workflow_status(
    state: &AppState,
    workflow_id: &str,
) -> Result<Option<temporalio_client::WorkflowExecutionStatus>, ApiError> {
    use temporalio_client::WorkflowDescribeOptions;
    let handle = state
        .temporal
        .get_workflow_handle::<AgentRunWorkflow>(workflow_id.to_owned());
    match handle.describe(WorkflowDescribeOptions::default()).await {
        Ok(description) => Ok(Some(description.status())),
        Err(temporalio_client::errors::WorkflowInteractionError::NotFound(_)) => Ok(None),
        Err(error) => Err(ApiError::new(
            ErrorCode::TemporalUnavailable,
            format!("cannot ask Temporal about workflow {workflow_id}: {error}"),
        )),
    }
}

/// Whether Temporal is running the workflow of the session's current run. A suspended or ended
/// run has none; a run whose workflow is gone (or never started) is not executing.
pub(crate) async fn is_executing(
    state: &AppState,
    session: &SessionState,
) -> Result<bool, ApiError> {
    let Some(workflow_id) = session
        .workflow_id
        .as_ref()
        .filter(|_| session.status == Status::Active)
    else {
        return Ok(false);
    };
    Ok(workflow_status(state, workflow_id).await?
        == Some(temporalio_client::WorkflowExecutionStatus::Running))
}

/// `GET /snapshot`: the session's log pinned to a stream position (see [`SnapshotResponse`]).
async fn snapshot(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiQuery(query): ApiQuery<SessionQuery>,
) -> Result<Json<SnapshotResponse>, HttpError> {
    principal.may_act_on(&query.session_id)?;
    Ok(Json(session_snapshot(&state, &query.session_id).await?))
}

/// The session's log pinned to a stream position (see [`SnapshotResponse`]).
pub async fn session_snapshot(
    state: &AppState,
    session_id: &str,
) -> Result<SnapshotResponse, ApiError> {
    let address = checked_address(session_id)?;
    let snapshot = state.store.snapshot(&address).await.map_err(store_error)?;
    snapshot.ok_or_else(|| no_session(session_id))
}

/// `GET /usage`: what the session has spent so far.
async fn usage(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiQuery(query): ApiQuery<SessionQuery>,
) -> Result<Json<UsageResponse>, HttpError> {
    principal.may_act_on(&query.session_id)?;
    Ok(Json(session_usage(&state, &query.session_id).await?))
}

/// What the session has spent so far.
pub async fn session_usage(state: &AppState, session_id: &str) -> Result<UsageResponse, ApiError> {
    let address = checked_address(session_id)?;
    let rollup = state
        .store
        .usage_rollup(&address)
        .await
        .map_err(store_error)?
        .ok_or_else(|| no_session(session_id))?;
    Ok(UsageResponse {
        session_id: session_id.to_owned(),
        rollup,
    })
}

/// The state of a session the request names: `validation_error` for a malformed id,
/// `session_not_found` for an unknown one.
pub async fn existing_session(
    state: &AppState,
    session_id: &str,
) -> Result<SessionState, ApiError> {
    state
        .store
        .session(&checked_address(session_id)?)
        .await
        .map_err(store_error)?
        .ok_or_else(|| no_session(session_id))
}

/// The address of a top-level session, if the id is well-formed.
fn checked_address(session_id: &str) -> Result<SessionAddress, ApiError> {
    if !ids::is_valid_name(session_id) {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            "malformed sessionId",
        ));
    }
    Ok(SessionAddress::root(session_id))
}

fn no_session(session_id: &str) -> ApiError {
    ApiError::new(
        ErrorCode::SessionNotFound,
        format!("no session {session_id}"),
    )
}

/// How long a follower waits for its feed before checking the session again.
const STREAM_POLL_MS: u64 = 10_000;

async fn sse(
    State(state): State<AppState>,
    Extension(principal): Extension<Principal>,
    ApiQuery(query): ApiQuery<SessionQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, HttpError> {
    principal.may_act_on(&query.session_id)?;
    let counted = crate::metrics::FollowerGuard::new(&state.metrics.followers);
    let follow = Follow::open(state, &query.session_id, query.from_sequence).await?;
    let events = stream::unfold((counted, follow), |(counted, mut follow)| async move {
        let events = match follow.next_chunks().await? {
            Ok(chunks) => chunks.iter().map(|chunk| Ok(chunk_event(chunk))).collect(),
            Err(error) => vec![Ok(error_event(&error))],
        };
        Some((stream::iter(events), (counted, follow)))
    })
    .flatten();
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// A chunk as an SSE event: its sequence as the `id:`, its JSON as the data.
fn chunk_event(chunk: &StreamChunk) -> Event {
    Event::default()
        .id(chunk.sequence.to_string())
        .json_data(chunk)
        .unwrap_or_else(|_| {
            error_event(&ApiError::new(
                ErrorCode::Internal,
                "chunk could not be encoded",
            ))
        })
}

/// The position of one follower (an SSE or a gRPC subscriber) in a session's stream: what it
/// missed comes from Redis, new chunks from the session's shared feed.
pub struct Follow {
    state: AppState,
    address: SessionAddress,
    /// New chunks, from the session's shared feed.
    feed: tokio::sync::broadcast::Receiver<crate::fanout::Batch>,
    after: u64,
    /// Chunks after `after` may be in Redis only: read them there before taking the feed.
    behind: bool,
    finished: bool,
}

/// Most chunks read from Redis at once when a follower catches up.
const CATCH_UP_BATCH: usize = 512;

impl Follow {
    /// Follows a session after sequence `after` (exclusive): `session_not_found` for an unknown
    /// session. A follower that has seen everything of an ended session ends at once.
    pub async fn open(state: AppState, session_id: &str, after: u64) -> Result<Self, ApiError> {
        let session = existing_session(&state, session_id).await?;
        let finished = session.status.is_terminal() && session.last_sequence <= after;
        let address = SessionAddress::root(session_id);
        let feed = state
            .streams
            .subscribe(&state.store, &address)
            .await
            .map_err(store_error)?;
        Ok(Self {
            state,
            address,
            feed,
            after,
            behind: true,
            finished,
        })
    }

    /// The next chunks, up to and with the `end` chunk; `None` once the stream is over (after
    /// `end`, or when the session has ended and nothing newer remains). An error (`TRUNCATED`
    /// when the chunks after the position are no longer kept, `store_unavailable`) is the
    /// stream's last item.
    pub async fn next_chunks(&mut self) -> Option<Result<Vec<StreamChunk>, ApiError>> {
        use tokio::sync::broadcast::error::RecvError;
        while !self.finished {
            if self.behind {
                match self.catch_up().await {
                    Ok(chunks) if chunks.is_empty() => self.behind = false,
                    Ok(chunks) => return Some(Ok(self.taken(chunks))),
                    Err(error) => {
                        self.finished = true;
                        return Some(Err(error));
                    }
                }
            }
            let wait = std::time::Duration::from_millis(STREAM_POLL_MS);
            match tokio::time::timeout(wait, self.feed.recv()).await {
                Ok(Ok(batch)) => {
                    let fresh: Vec<&StreamChunk> =
                        batch.iter().filter(|c| c.sequence > self.after).collect();
                    match fresh.first() {
                        None => continue,
                        // A gap: Redis has what the feed did not carry.
                        Some(first) if first.sequence != self.after + 1 => self.behind = true,
                        Some(_) => {
                            let chunks = fresh.into_iter().cloned().collect();
                            return Some(Ok(self.taken(chunks)));
                        }
                    }
                }
                Ok(Err(RecvError::Lagged(_))) => self.behind = true,
                Ok(Err(RecvError::Closed)) => {
                    match self
                        .state
                        .streams
                        .subscribe(&self.state.store, &self.address)
                        .await
                    {
                        Ok(feed) => self.feed = feed,
                        Err(error) => {
                            tracing::warn!(%error, "re-subscribing to a stream failed");
                            self.finished = true;
                            return Some(Err(ApiError::new(
                                ErrorCode::StoreUnavailable,
                                "reading the stream failed",
                            )));
                        }
                    }
                    self.behind = true;
                }
                Err(_) => match self.state.store.session(&self.address).await {
                    Ok(Some(session))
                        if session.status.is_terminal() && session.last_sequence <= self.after =>
                    {
                        self.finished = true;
                    }
                    Ok(_) => {}
                    Err(error) => tracing::warn!(%error, "status read failed while streaming"),
                },
            }
        }
        None
    }

    /// Reads chunks after the position straight from Redis; `TRUNCATED` when they are gone.
    async fn catch_up(&mut self) -> Result<Vec<StreamChunk>, ApiError> {
        let chunks = self
            .state
            .store
            .chunks_after(&self.address, self.after, CATCH_UP_BATCH)
            .await
            .map_err(|error| {
                tracing::warn!(session = %self.address.session_id, %error, "stream read failed");
                ApiError::new(ErrorCode::StoreUnavailable, "reading the stream failed")
            })?;
        if let Some(first) = chunks.first()
            && first.sequence != self.after + 1
        {
            let floor = first.sequence - 1;
            return Err(ApiError::new(
                ErrorCode::Truncated,
                format!(
                    "the stream no longer holds the chunks after {}; read the snapshot and \
                     follow from its streamSequence",
                    self.after
                ),
            )
            .with("oldestRetainedSequence", floor));
        }
        Ok(chunks)
    }

    /// The chunks up to and with the first `end` chunk, the position moved past them.
    fn taken(&mut self, mut chunks: Vec<StreamChunk>) -> Vec<StreamChunk> {
        if let Some(end) = chunks
            .iter()
            .position(|chunk| matches!(chunk.kind, ChunkKind::End { .. }))
        {
            chunks.truncate(end + 1);
            self.finished = true;
        }
        if let Some(last) = chunks.last() {
            self.after = last.sequence;
        }
        chunks
    }
}

/// A typed error as an SSE event named `error`; its data is an [`ApiError`] body.
fn error_event(error: &ApiError) -> Event {
    let body = serde_json::to_string(error).expect("an ApiError always serializes");
    Event::default().event("error").data(body)
}

pub(crate) fn store_error(error: store::Error) -> ApiError {
    match error {
        store::Error::Redis(ref e) => {
            tracing::error!(%e, "redis failed");
            ApiError::new(ErrorCode::StoreUnavailable, "the store is unavailable")
        }
        store::Error::SessionExists(id) => ApiError::new(
            ErrorCode::SessionAlreadyExists,
            format!("session {id} already exists"),
        ),
        store::Error::SessionNotFound(id) => {
            ApiError::new(ErrorCode::SessionNotFound, format!("no session {id}"))
        }
        store::Error::RunRefused { reason, .. } => ApiError::new(ErrorCode::RunNotActive, reason),
        store::Error::Corrupt { .. } => {
            tracing::error!(%error, "corrupt store data");
            ApiError::new(ErrorCode::Internal, "internal error")
        }
    }
}

/// A JSON body whose rejection (bad JSON, wrong content type, unknown field) is a typed
/// `validation_error`.
struct ApiJson<T>(T);

impl<T: serde::de::DeserializeOwned> FromRequest<AppState> for ApiJson<T> {
    type Rejection = HttpError;

    /// The body guards of [`bounded_body`] (the same cap as submits), then the JSON.
    async fn from_request(
        request: axum::extract::Request,
        state: &AppState,
    ) -> Result<Self, HttpError> {
        let (parts, body) = request.into_parts();
        let json = parts
            .headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if !json {
            return Err(ApiError::new(
                ErrorCode::ValidationError,
                "expected a body with Content-Type: application/json",
            )
            .into());
        }
        let cap = state.options.submit_limits.request_body_cap();
        let bytes = bounded_body(&parts.headers, body, cap).await?;
        let value = serde_json::from_slice(&bytes).map_err(|error| {
            ApiError::new(
                ErrorCode::ValidationError,
                format!("the body is not the expected JSON: {error}"),
            )
        })?;
        Ok(Self(value))
    }
}

/// A query string whose rejection is a typed `validation_error`.
struct ApiQuery<T>(T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = HttpError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, HttpError> {
        let Query(value) =
            Query::<T>::from_request_parts(parts, state)
                .await
                .map_err(|rejection| {
                    ApiError::new(ErrorCode::ValidationError, rejection.body_text())
                })?;
        Ok(Self(value))
    }
}

/// An [`ApiError`] as an HTTP response: the status from the code table and a JSON body.
#[derive(Debug)]
pub struct HttpError(pub ApiError);

impl From<ApiError> for HttpError {
    fn from(error: ApiError) -> Self {
        Self(error)
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        let mut status = StatusCode::from_u16(self.0.code.presentation().http_status)
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        // The one validation_error with a status of its own: a chunked body without a length.
        if self.0.details.get("cause").and_then(|c| c.as_str()) == Some("length_required") {
            status = StatusCode::LENGTH_REQUIRED;
        }
        if status.is_server_error() {
            tracing::error!(code = %self.0.code, error = %self.0.error, "request failed");
        } else {
            tracing::debug!(code = %self.0.code, error = %self.0.error, "request refused");
        }
        let retry_after = self.0.details.get("retryAfter").map(|v| v.to_string());
        let mut response = (status, Json(self.0)).into_response();
        if let Some(value) = retry_after.and_then(|v| v.parse().ok()) {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, value);
        }
        response
    }
}

#[cfg(test)]
mod body_tests {
    use super::json_depth;

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
}

//! The producer mount over real HTTP: `{base}/{agentType}/(start|resume|sse|status|snapshot|
//! usage|interrupt|abort)` against a real server, worker, Redis and Temporal. A start of a
//! caller-chosen session once, `ALREADY_RUNNING` (with the `streamId`, no second run) in each
//! status, `NOT_FOUND` for what the mount does not have, typed refusals of bad ids that write
//! nothing, and auth on every route. Fidelity (projections, snapshots, truncation) is in
//! `mount/fidelity.rs`.

mod callback;
mod fidelity;
mod relay;

use baton_client::Client as _;
use baton_tests::{Harness, WAIT_LIMIT, agents, open_options};
use baton_worker::{
    ServerOptions,
    auth::{Auth, BuiltinAuth},
    mount::Mount,
};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::{sync::Arc, time::Duration};
use temporalio_client::WorkflowCountOptions;

/// A client of one mount of a server.
pub(crate) struct MountClient {
    http: reqwest::Client,
    base: String,
    bearer: Option<String>,
}

/// One SSE event of a mount's stream: its `id:`, its `event:` name and its JSON data.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub(crate) id: Option<u64>,
    pub(crate) event: Option<String>,
    pub(crate) data: Value,
}

impl MountClient {
    /// A client of `harness`'s mount at `base_path`, with `bearer` or else the test servers'
    /// service key.
    pub(super) fn new(harness: &Harness, base_path: &str, bearer: Option<&str>) -> Self {
        let bearer = bearer.unwrap_or(baton_tests::TEST_SERVICE_KEY);
        Self::at(
            &format!("http://{}{base_path}", harness.address),
            Some(bearer),
        )
    }

    /// A client of `harness`'s mount that sends no credential.
    pub(super) fn anonymous(harness: &Harness, base_path: &str) -> Self {
        Self::at(&format!("http://{}{base_path}", harness.address), None)
    }

    /// A client of the mount at `base` (`http://host:port/agents`).
    pub(crate) fn at(base: &str, bearer: Option<&str>) -> Self {
        Self {
            http: reqwest::Client::new(),
            base: base.to_owned(),
            bearer: bearer.map(str::to_owned),
        }
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.bearer {
            Some(bearer) => request.bearer_auth(bearer),
            None => request,
        }
    }

    /// `POST {base}/{agent}/{action}` with a JSON body: the status and the JSON answer.
    pub(crate) async fn post(&self, agent: &str, action: &str, body: Value) -> (StatusCode, Value) {
        let url = format!("{}/{agent}/{action}", self.base);
        let response = self
            .authorized(self.http.post(url).json(&body))
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap())
    }

    /// `GET {base}/{agent}/{action}?sessionId=`: the status and the JSON answer.
    pub(crate) async fn get(
        &self,
        agent: &str,
        action: &str,
        session: &str,
    ) -> (StatusCode, Value) {
        let url = format!("{}/{agent}/{action}", self.base);
        let request = self.http.get(url).query(&[("sessionId", session)]);
        let response = self.authorized(request).send().await.unwrap();
        let status = response.status();
        (status, response.json().await.unwrap())
    }

    /// Every event of `GET {base}/{agent}/sse?sessionId=&fromSequence=`, until the server ends
    /// the stream.
    pub(crate) async fn frames(&self, agent: &str, session: &str, from: u64) -> Vec<Frame> {
        let url = format!("{}/{agent}/sse", self.base);
        let query = [
            ("sessionId", session.to_owned()),
            ("fromSequence", from.to_string()),
        ];
        let request = self.authorized(self.http.get(url).query(&query));
        let read = async {
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), StatusCode::OK);
            response.text().await.unwrap()
        };
        let text = tokio::time::timeout(WAIT_LIMIT, read)
            .await
            .expect("the mount's stream ends in time");
        text.split("\n\n")
            .filter_map(|block| {
                let (mut id, mut event, mut data) = (None, None, None);
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("id:") {
                        id = value.trim().parse().ok();
                    } else if let Some(value) = line.strip_prefix("event:") {
                        event = Some(value.trim().to_owned());
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data = Some(serde_json::from_str(value.trim()).unwrap());
                    }
                }
                data.map(|data| Frame { id, event, data })
            })
            .collect()
    }

    /// Starts session `session` of `agent` with `message`; panics unless it is started.
    pub(crate) async fn start(&self, agent: &str, session: &str, message: &str) -> Value {
        let body = json!({"sessionId": session, "message": message});
        let (status, answer) = self.post(agent, "start", body).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        answer
    }
}

/// A session id of the caller's choosing, unique to the test.
pub(crate) fn chosen_id(kind: &str) -> String {
    format!("{kind}-{}", uuid::Uuid::new_v4().simple())
}

/// How many agent runs (workflows) the harness's task queue has had.
pub(crate) async fn runs(harness: &Harness, expected: usize) -> usize {
    // Temporal's visibility follows the runs asynchronously: read until it shows the expected
    // count (a run more shows at once), at most the wait limit.
    let deadline = std::time::Instant::now() + baton_tests::WAIT_LIMIT;
    loop {
        let count = harness
            .temporal
            .count_workflows(
                format!(
                    "TaskQueue = '{}' AND WorkflowType = 'AgentRunWorkflow'",
                    harness.task_queue
                ),
                WorkflowCountOptions::default(),
            )
            .await
            .unwrap()
            .count();
        if count >= expected || std::time::Instant::now() > deadline {
            return count;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chosen_session_starts_once_streams_to_its_end_and_then_attaches() {
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);
    let session = chosen_id("mnt");
    let started = mount.start("two_steps", &session, "hello").await;
    assert_eq!(started["sessionId"], session);
    let stream_id = started["streamId"].as_str().unwrap().to_owned();

    let frames = mount.frames("two_steps", &session, 0).await;
    let end = frames.last().unwrap();
    assert_eq!(end.data["type"], "end");
    assert_eq!(end.data["status"], "completed");
    assert_eq!(end.data["output"], "BATON says hello");
    assert!(end.data["usage"]["inputTokens"].is_u64());
    let ids: Vec<u64> = frames.iter().map(|f| f.id.unwrap()).collect();
    assert_eq!(ids, (1..=frames.len() as u64).collect::<Vec<_>>());
    for frame in &frames {
        assert_eq!(frame.data["sequence"], json!(frame.id.unwrap()));
        assert_eq!(frame.data["streamId"], stream_id);
    }

    // Attaching at the end's own position gets the end again, not an empty stream.
    let last = end.id.unwrap();
    let again = mount.frames("two_steps", &session, last).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].id, Some(last));
    for field in ["type", "status", "output", "sequence", "streamId", "usage"] {
        assert_eq!(again[0].data[field], end.data[field], "{field}");
    }

    let (status, answer) = mount.get("two_steps", "status", &session).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["status"], "completed");
    assert_eq!(answer["isExecuting"], false);
    assert_eq!(answer["awaitingClientTool"], false);
    assert_eq!(answer["output"], "BATON says hello");

    // The same start again (a consumer's retry): attach, no second run.
    let body = json!({"sessionId": session, "message": "hello"});
    let (status, refused) = mount.post("two_steps", "start", body).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(refused["code"], "ALREADY_RUNNING");
    assert_eq!(refused["streamId"], stream_id);
    assert_eq!(runs(&harness, 1).await, 1);

    let (status, usage) = mount.get("two_steps", "usage", &session).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(usage["sessionId"], session);
    assert_eq!(usage["rollup"]["toolCalls"]["add"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_of_a_running_suspended_or_ended_session_attaches_and_starts_nothing() {
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);

    // Running: its run holds it (here a session whose workflow never started, still `active`).
    let running = chosen_id("running");
    harness
        .session_without_workflow(&running, "two_steps")
        .await;
    // Suspended: waiting for a person's answer.
    let suspended = chosen_id("suspended");
    mount.start("asker_only", &suspended, "go").await;
    let paused = mount.frames("asker_only", &suspended, 0).await;
    assert_eq!(paused.last().unwrap().data["status"], "paused");
    // Ended.
    let ended = chosen_id("ended");
    mount.start("two_steps", &ended, "go").await;
    mount.frames("two_steps", &ended, 0).await;

    // The running one was not started through the mount: no caller attaches to it.
    let body = json!({"sessionId": running, "input": {"other": "input"}});
    let (status, refused) = mount.post("two_steps", "start", body).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(refused["code"], "session_mismatch");
    assert_eq!(refused.get("streamId"), None);
    let (status, _) = mount.get("two_steps", "status", &running).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    for (agent, session) in [("asker_only", &suspended), ("two_steps", &ended)] {
        let stream_id = harness.client.status(session).await.unwrap().stream_id;
        let before = harness.client.status(session).await.unwrap();
        let body = json!({"sessionId": session, "input": {"other": "input"}});
        let (status, refused) = mount.post(agent, "start", body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{session}");
        assert_eq!(refused["code"], "ALREADY_RUNNING");
        assert_eq!(refused["streamId"], stream_id);
        assert_eq!(runs(&harness, 2).await, 2, "{session}");
        let after = harness.client.status(session).await.unwrap();
        assert_eq!(
            (after.run_id, after.last_sequence, after.status),
            (before.run_id, before.last_sequence, before.status)
        );
    }

    // Two starts of one new session at once: one starts it, the other attaches.
    let raced = chosen_id("raced");
    let body = json!({"sessionId": raced, "message": "go"});
    let (first, second) = tokio::join!(
        mount.post("two_steps", "start", body.clone()),
        mount.post("two_steps", "start", body.clone())
    );
    let mut statuses = [first.0, second.0];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::OK, StatusCode::CONFLICT]);
    let stream_ids: Vec<&Value> = [&first.1, &second.1].map(|a| &a["streamId"]).into();
    assert_eq!(stream_ids[0], stream_ids[1]);
    mount.frames("two_steps", &raced, 0).await;
    assert_eq!(runs(&harness, 3).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_mount_does_not_have_is_not_found() {
    let options = ServerOptions {
        mounts: vec![
            Mount::new("/agents").allow(["two_steps", "asker_only"]),
            Mount::new("/bare").without_usage(),
        ],
        ..open_options()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let mount = MountClient::new(&harness, "/agents", None);
    let session = chosen_id("nf");
    mount.start("two_steps", &session, "go").await;
    mount.frames("two_steps", &session, 0).await;
    let session_body = json!({"sessionId": session});

    // An unknown session, on every route that names one.
    let unknown = chosen_id("unknown");
    for action in ["status", "snapshot", "usage", "sse"] {
        let (status, refused) = mount.get("two_steps", action, &unknown).await;
        assert_eq!(
            (status, &refused["code"]),
            (StatusCode::NOT_FOUND, &json!("NOT_FOUND")),
            "{action}"
        );
        assert!(refused["error"].as_str().unwrap().contains(&unknown));
    }
    for action in ["resume", "interrupt", "abort"] {
        let body = json!({"sessionId": unknown, "mode": "continue"});
        let body = if action == "resume" {
            body
        } else {
            json!({"sessionId": unknown})
        };
        let (status, refused) = mount.post("two_steps", action, body).await;
        assert_eq!(
            (status, &refused["code"]),
            (StatusCode::NOT_FOUND, &json!("NOT_FOUND")),
            "{action}"
        );
    }
    // A session of another agent type than the route's, on every route.
    for action in ["status", "snapshot", "usage", "sse"] {
        let (status, refused) = mount.get("asker_only", action, &session).await;
        assert_eq!(
            (status, &refused["code"]),
            (StatusCode::NOT_FOUND, &json!("NOT_FOUND")),
            "{action}"
        );
    }
    for action in ["interrupt", "abort", "start"] {
        let body = json!({"sessionId": session, "message": "x"});
        let body = if action == "start" {
            body
        } else {
            session_body.clone()
        };
        let (status, refused) = mount.post("asker_only", action, body).await;
        assert_eq!(
            (status, &refused["code"]),
            (StatusCode::NOT_FOUND, &json!("NOT_FOUND")),
            "{action}"
        );
    }
    // An agent type the server has but the mount does not serve, and one nobody has.
    for agent in ["asker", "no_such_agent"] {
        let (status, refused) = mount.get(agent, "status", &session).await;
        assert_eq!(
            (status, &refused["code"]),
            (StatusCode::NOT_FOUND, &json!("NOT_FOUND"))
        );
        let fresh = chosen_id("fresh");
        let body = json!({"sessionId": fresh, "message": "x"});
        let (status, refused) = mount.post(agent, "start", body).await;
        assert_eq!(
            (status, &refused["code"]),
            (StatusCode::NOT_FOUND, &json!("NOT_FOUND"))
        );
        assert!(harness.client.status(&fresh).await.is_err());
    }
    // A 5 KB agent name is not echoed whole: the error names it bounded.
    let long_name = "a".repeat(5000);
    let (status, refused) = mount.get(&long_name, "status", &session).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let error = refused["error"].as_str().unwrap();
    assert!(error.len() < 400, "{} bytes: {error}", error.len());
    assert!(error.contains("[+"), "{error}");
    // The second mount serves every type but no usage.
    let bare = MountClient::new(&harness, "/bare", None);
    let (status, refused) = bare.get("two_steps", "usage", &session).await;
    assert_eq!(
        (status, &refused["code"]),
        (StatusCode::NOT_FOUND, &json!("FEATURE_UNAVAILABLE"))
    );
    let (status, _) = bare.get("two_steps", "status", &session).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_starts_are_refused_typed_and_write_nothing() {
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);
    let long = "x".repeat(65);
    let cases = [
        json!({"sessionId": "a__b", "message": "go"}),
        json!({"sessionId": long, "message": "go"}),
        json!({"sessionId": format!("root.{}", "0".repeat(32)), "message": "go"}),
        json!({"sessionId": "has space", "message": "go"}),
        json!({"sessionId": "", "message": "go"}),
        json!({"sessionId": "ok-id", "message": "go", "input": "also"}),
        json!({"sessionId": "ok-id"}),
        json!({"sessionId": "ok-id", "message": "   "}),
        json!({"sessionId": "ok-id", "message": "go", "tags": [""]}),
        json!({"sessionId": "ok-id", "message": "go", "state": {"x": 1}}),
        json!({"sessionId": "ok-id", "message": "go", "unknown": 1}),
        json!({"message": "go"}),
    ];
    for body in cases {
        let (status, refused) = mount.post("two_steps", "start", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {refused}");
        let code = refused["code"].as_str().unwrap();
        assert!(
            ["validation_error", "invalid_state"].contains(&code),
            "{body}: {refused}"
        );
        assert!(refused["error"].is_string());
    }
    harness.assert_nothing_written().await;
}

const KEY: &str = "mount-operator-key";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_refuses_a_caller_without_credentials_and_a_session_token_cannot_start() {
    let options = ServerOptions {
        auth: Auth::Builtin(Arc::new(BuiltinAuth::new(
            vec![KEY.into()],
            b"mount secret",
            Duration::from_secs(600),
        ))),
        ..open_options()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let anonymous = MountClient::anonymous(&harness, "/agents");
    let forged = MountClient::new(&harness, "/agents", Some("not-a-key"));
    let session = chosen_id("auth");
    let body = json!({"sessionId": session, "message": "go", "mode": "continue"});
    for client in [&anonymous, &forged] {
        for action in ["start", "resume", "interrupt", "abort"] {
            let (status, refused) = client.post("two_steps", action, body.clone()).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{action}");
            assert_eq!(refused["code"], "unauthorized");
        }
        for action in ["sse", "status", "snapshot", "usage"] {
            let (status, refused) = client.get("two_steps", action, &session).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{action}");
            assert_eq!(refused["code"], "unauthorized");
        }
    }
    harness.assert_nothing_written().await;

    let operator = MountClient::new(&harness, "/agents", Some(KEY));
    operator.start("two_steps", &session, "go").await;
    let token = harness
        .state
        .options
        .auth
        .token_for(&session)
        .expect("built-in auth issues tokens");
    let holder = MountClient::new(&harness, "/agents", Some(&token));
    let (status, _) = holder.get("two_steps", "status", &session).await;
    assert_eq!(status, StatusCode::OK);
    let other = chosen_id("other");
    let (status, refused) = holder
        .post(
            "two_steps",
            "start",
            json!({"sessionId": other, "message": "go"}),
        )
        .await;
    assert_eq!(
        (status, &refused["code"]),
        (StatusCode::FORBIDDEN, &json!("forbidden"))
    );
    let (status, refused) = holder.get("two_steps", "status", &other).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(refused["code"], "session_mismatch");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_session_is_interrupted_or_aborted_through_the_mount() {
    let harness = Harness::start(agents::registry()).await;
    let mount = MountClient::new(&harness, "/agents", None);
    for (action, word) in [("interrupt", "interrupted"), ("abort", "failed")] {
        let session = chosen_id(action);
        mount.start("asker_only", &session, "go").await;
        let frames = mount.frames("asker_only", &session, 0).await;
        assert_eq!(frames.last().unwrap().data["status"], "paused");
        let (status, answer) = mount.get("asker_only", "status", &session).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(answer["status"], "paused");
        assert_eq!(answer["awaitingClientTool"], true);
        assert_eq!(answer["isExecuting"], false);

        let (status, stopped) = mount
            .post("asker_only", action, json!({"sessionId": session}))
            .await;
        assert_eq!(status, StatusCode::OK, "{stopped}");
        assert_eq!(stopped["status"], word);
        let last = frames.last().unwrap().id.unwrap();
        let rest = mount.frames("asker_only", &session, last).await;
        assert_eq!(rest.last().unwrap().data["type"], "end");
        assert_eq!(rest.last().unwrap().data["status"], word);
        let (status, refused) = mount
            .post("asker_only", action, json!({"sessionId": session}))
            .await;
        assert_eq!(
            (status, &refused["code"]),
            (StatusCode::CONFLICT, &json!("run_not_active"))
        );
    }
}

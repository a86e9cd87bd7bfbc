//! The audit log: each action on a session is one event naming its principal (an operator key's
//! configured name, or the session token's subject) and its outcome.

use baton_client::{Client as _, HttpClient};
use baton_core::message::ToolOutcome;
use baton_tests::{Harness, agents, events};
use baton_worker::{
    ServerOptions,
    auth::{Auth, BuiltinAuth},
};
use futures::StreamExt as _;
use serde_json::json;
use std::{sync::Arc, time::Duration};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_action_logs_one_event_naming_its_principal() {
    events::capture();
    let options = ServerOptions {
        auth: Auth::Builtin(Arc::new(BuiltinAuth::with_named_keys(
            vec![("alice".into(), "alice-key".into())],
            b"test secret",
            Duration::from_secs(600),
        ))),
        ..Default::default()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let address = format!("http://{}", harness.address);
    let alice = HttpClient::with_bearer(&address, "alice-key").unwrap();
    let started = alice.start("asker_only", "go").await.unwrap();
    let session = started.session_id.clone();
    let mut chunks = alice.follow(&session, 0);
    while let Some(chunk) = chunks.next().await {
        if chunk.unwrap().kind.name() == "suspended" {
            break;
        }
    }
    alice
        .submit(
            &session,
            "call_1_1",
            &ToolOutcome::Result(json!({"answer": "Ann"})),
        )
        .await
        .unwrap();
    let holder = HttpClient::with_bearer(&address, started.token.as_deref().unwrap()).unwrap();
    holder.stop(&session, false).await.unwrap();
    // A refused action is logged with its code.
    holder.stop(&session, false).await.unwrap_err();

    let logged: Vec<(String, String, String)> = events::audit_of_session(&session)
        .into_iter()
        .map(|fields| {
            (
                fields["event"].clone(),
                fields["principal"].clone(),
                fields["outcome"].clone(),
            )
        })
        .collect();
    let holder_name = format!("session:{session}");
    let expected = [
        ("start", "alice", "ok"),
        ("token_mint", "alice", "ok"),
        ("answer", "alice", "ok"),
        ("interrupt", holder_name.as_str(), "ok"),
        ("interrupt", holder_name.as_str(), "run_not_active"),
    ]
    .map(|(event, principal, outcome)| {
        (event.to_owned(), principal.to_owned(), outcome.to_owned())
    });
    assert_eq!(logged, expected);
}

/// A chat's first and next message (a user token), the mount's start, interrupt, resume and
/// abort (a service key) are each one audit event naming its principal, and a refusal by policy
/// says which rule refused it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_turns_and_mount_actions_are_audited_and_a_refusal_says_why() {
    events::capture();
    const KEY: &str = "an operator key of at least thirty-two bytes";
    let harness = Harness::start_with(agents::registry(), baton_tests::keyed_options(KEY)).await;
    let api = baton_tests::bearer_api::BearerApi::new(&harness, KEY);
    let ada = api.mint("ada", &["two_steps"]).await;
    let chat = baton_tests::unique("audited-chat");
    let operator = HttpClient::with_bearer(&api.base, KEY).unwrap();
    for text in ["first", "second"] {
        let (status, streamed) = api.chat(&ada, &chat, "two_steps", text, text).await;
        assert_eq!(status, 200, "{streamed}");
        baton_tests::chunks_through(&operator, &chat, 0, baton_tests::WAIT_LIMIT, false).await;
    }

    let mount = crate::mount::MountClient::new(&harness, "/agents", None);
    let session = crate::mount::chosen_id("audited");
    mount.start("asker_only", &session, "go").await;
    mount.frames("asker_only", &session, 0).await;
    let (status, _) = mount
        .post("asker_only", "interrupt", json!({"sessionId": session}))
        .await;
    assert_eq!(status, 200);
    let (status, _) = mount
        .post(
            "asker_only",
            "resume",
            json!({"sessionId": session, "mode": "with_message", "message": "again"}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = mount
        .post("asker_only", "abort", json!({"sessionId": session}))
        .await;
    assert_eq!(status, 200);
    // A user token on a session of someone else's: refused, with the rule that refused it.
    let (status, refused) = api.get(&ada, &format!("/status?sessionId={session}")).await;
    assert_eq!(status, 403, "{refused}");

    let of = |session: &str| -> Vec<(String, String, String)> {
        events::audit_of_session(session)
            .into_iter()
            .map(|fields| {
                (
                    fields["event"].clone(),
                    fields["principal"].clone(),
                    fields["outcome"].clone(),
                )
            })
            .collect()
    };
    let triple = |event: &str, principal: &str, outcome: &str| {
        (event.to_owned(), principal.to_owned(), outcome.to_owned())
    };
    assert_eq!(
        of(&chat),
        [
            triple("start", "user:ada", "ok"),
            triple("resume", "user:ada", "ok")
        ]
    );
    let service = format!("service:{}", baton_tests::TEST_SERVICE);
    let mut mount_events = of(&session);
    let refusal = mount_events.pop().expect("the refusal is audited");
    assert_eq!(
        mount_events,
        [
            triple("start", &service, "ok"),
            triple("interrupt", &service, "ok"),
            triple("resume", &service, "ok"),
            triple("abort", &service, "ok"),
        ]
    );
    assert_eq!(refusal, triple("status", "user:ada", "session_mismatch"));
    let reason = events::audit_of_session(&session)
        .last()
        .and_then(|fields| fields.get("reason").cloned())
        .unwrap_or_default();
    assert!(reason.contains("another session"), "{reason:?}");
}

/// Over gRPC as over HTTP, a refusal by policy is one audit event, the operation's (with its
/// principal and session), and only a refused credential is the transport's own `refused` event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_refusal_is_audited_once_by_its_operation() {
    events::capture();
    const KEY: &str = "an operator key of at least thirty-two bytes";
    let harness = Harness::start_with(agents::registry(), baton_tests::keyed_options(KEY)).await;
    let api = baton_tests::bearer_api::BearerApi::new(&harness, KEY);
    let user = baton_tests::unique("grpc-audited");
    let token = api.mint(&user, &["two_steps"]).await;
    let operator = HttpClient::with_bearer(&api.base, KEY).unwrap();
    let session = operator.start("asker_only", "go").await.unwrap().session_id;
    let grpc = harness.grpc_address.to_string();

    let as_user = baton_client::GrpcClient::with_bearer(&grpc, &token).unwrap();
    let baton_client::Error::Api(refused) = as_user.status(&session).await.unwrap_err() else {
        panic!("a typed refusal");
    };
    let principal = format!("user:{user}");
    let of_user: Vec<(String, String)> = events::audit_with("principal", &principal)
        .into_iter()
        .map(|fields| (fields["event"].clone(), fields["outcome"].clone()))
        .collect();
    assert_eq!(
        of_user,
        [("status".to_owned(), refused.code.as_str().to_owned())]
    );
    let by_transport = events::audit_with("route", "grpc")
        .into_iter()
        .filter(|fields| fields.get("reason") == Some(&refused.error))
        .count();
    assert_eq!(
        by_transport, 0,
        "the transport audited the operation's refusal again"
    );

    let garbage = baton_client::GrpcClient::with_bearer(&grpc, "not a credential").unwrap();
    let before = events::audit_with("route", "grpc").len();
    garbage.status(&session).await.unwrap_err();
    assert!(events::audit_with("route", "grpc").len() > before);
}

//! User tokens and revocation over real HTTP: an operator mints a user token (`POST /tokens`,
//! bad input refused typed), which starts chats and sessions of its agents for its user only and
//! sees only its user's sessions; revoked tokens (`POST /tokens/revoke`, an operator's abort of
//! the session) are refused on the next request; browser origins are none by default and
//! answered exactly when configured.

use super::chat_registry;
use baton_tests::{
    Harness,
    bearer_api::{BearerApi, code},
    events, keyed_options,
};
use baton_worker::{AllowedOrigins, ServerOptions};
use serde_json::{Value, json};

const KEY: &str = "operator-key";

type Api = BearerApi;

fn fresh() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_token_starts_its_agents_for_its_user_and_sees_only_its_sessions() {
    events::capture();
    let harness = Harness::start_with(chat_registry(), keyed_options(KEY)).await;
    let api = Api::new(&harness, KEY);
    let ada = format!("ada-{}", fresh());
    let bob = format!("bob-{}", fresh());

    // Bad requests are refused, typed, before anything is signed.
    for bad in [
        json!({"userId": "", "agents": ["chatter"]}),
        json!({"userId": "a\u{7}", "agents": ["chatter"]}),
        json!({"userId": &ada, "agents": []}),
        json!({"userId": &ada, "agents": ["nobody"]}),
        json!({"userId": &ada, "agents": ["chatter", "chatter"]}),
        json!({"userId": &ada, "agents": ["chatter"], "ttlSecs": 0}),
        json!({"userId": &ada, "agents": ["chatter"], "ttlSecs": 86_401}),
        json!({"userId": &ada, "agents": ["chatter"], "role": "admin"}),
    ] {
        let answer = api.post(KEY, "/tokens", bad.clone()).await;
        assert_eq!(
            code(&answer),
            (400, "validation_error"),
            "{bad}: {}",
            answer.1
        );
    }
    let unauthenticated = api.post("nonsense", "/tokens", json!({})).await;
    assert_eq!(code(&unauthenticated), (401, "unauthorized"));

    let (status, minted) = api
        .post(
            KEY,
            "/tokens",
            json!({"userId": &ada, "agents": ["chatter"]}),
        )
        .await;
    assert_eq!(status, 200, "{minted}");
    assert_eq!(minted["userId"], ada.as_str());
    assert_eq!(minted["agents"], json!(["chatter"]));
    let ada_token = minted["token"].as_str().unwrap().to_owned();
    // The refusals naming her (five of the bad requests) and the mint are logged.
    let minted_log = events::audit_with("subject", &format!("user:{ada}"));
    assert_eq!(minted_log.len(), 6, "{minted_log:?}");
    assert_eq!(minted_log[5]["event"], "token_mint");
    assert_eq!(minted_log[5]["principal"], "operator");
    assert_eq!(minted_log[5]["outcome"], "ok");
    // A user token mints nothing.
    let again = api
        .post(
            &ada_token,
            "/tokens",
            json!({"userId": &ada, "agents": ["chatter"]}),
        )
        .await;
    assert_eq!(code(&again), (403, "forbidden"));

    // Ada's token starts a chat of her agent; the session's userId is hers.
    let chat = fresh();
    let (status, streamed) = api.chat(&ada_token, &chat, "chatter", "m", "hello").await;
    assert_eq!(status, 200, "{streamed}");
    assert!(streamed.contains(r#""delta":"hello""#), "{streamed}");
    assert!(streamed.ends_with("data: [DONE]\n\n"), "{streamed}");
    let (_, state) = api.get(KEY, &format!("/status?sessionId={chat}")).await;
    assert_eq!(state["userId"], ada.as_str(), "{state}");
    let (status, next) = api.chat(&ada_token, &chat, "chatter", "m", "again").await;
    assert_eq!(status, 200, "{next}");
    // Not an agent the token names.
    let (status, refused) = api
        .chat(&ada_token, &fresh(), "asker_only", "m", "hi")
        .await;
    assert_eq!(status, 403, "{refused}");
    // `/start` too, for her only.
    let started = api
        .post(
            &ada_token,
            "/start",
            json!({"agent": "chatter", "message": "hi"}),
        )
        .await;
    assert_eq!(started.0, 200, "{}", started.1);
    let own_start = started.1["sessionId"].as_str().unwrap().to_owned();
    let (_, state) = api
        .get(KEY, &format!("/status?sessionId={own_start}"))
        .await;
    assert_eq!(state["userId"], ada.as_str(), "{state}");
    let for_bob = api
        .post(
            &ada_token,
            "/start",
            json!({"agent": "chatter", "message": "hi", "userId": &bob}),
        )
        .await;
    assert_eq!(code(&for_bob), (403, "forbidden"));

    // Bob's session (an operator's start) is not Ada's to read, answer or stop.
    let bobs = api
        .post(
            KEY,
            "/start",
            json!({"agent": "chatter", "message": "hi", "userId": &bob}),
        )
        .await;
    let bobs = bobs.1["sessionId"].as_str().unwrap().to_owned();
    let read = api
        .get(&ada_token, &format!("/status?sessionId={bobs}"))
        .await;
    assert_eq!(code(&read), (403, "session_mismatch"));
    let snapshot = api.get(&ada_token, &format!("/chat/{bobs}/snapshot")).await;
    assert_eq!(code(&snapshot), (403, "session_mismatch"));
    let (status, _) = api
        .chat(&ada_token, &bobs, "chatter", "m", "mine now")
        .await;
    assert_eq!(status, 403);
    let stop = api
        .post(&ada_token, &format!("/chat/{bobs}/stop"), json!({}))
        .await;
    assert_eq!(code(&stop), (403, "session_mismatch"));
    assert_eq!(
        api.get(&ada_token, &format!("/status?sessionId={chat}"))
            .await
            .0,
        200
    );

    // Her list is hers alone, whatever she asks for.
    let listed = |page: &Value| -> Vec<String> {
        page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut mine = Vec::new();
    for _ in 0..100 {
        let (status, page) = api.get(&ada_token, "/sessions").await;
        assert_eq!(status, 200, "{page}");
        mine = listed(&page);
        if mine.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    mine.sort();
    let mut expected = vec![chat.clone(), own_start.clone()];
    expected.sort();
    assert_eq!(mine, expected);
    let (_, asked_for_bob) = api
        .get(&ada_token, &format!("/sessions?userId={bob}"))
        .await;
    assert!(listed(&asked_for_bob).is_empty(), "{asked_for_bob}");

    // Revoked: refused from the next request on; a token revokes only itself.
    let bob_token = api.mint(&bob, &["chatter"]).await;
    let not_hers = api
        .post(&ada_token, "/tokens/revoke", json!({"token": &bob_token}))
        .await;
    assert_eq!(code(&not_hers), (403, "forbidden"));
    let forged = api
        .post(KEY, "/tokens/revoke", json!({"token": "u1.e30.AAAA"}))
        .await;
    assert_eq!(code(&forged), (401, "unauthorized"));
    let (status, revoked) = api
        .post(KEY, "/tokens/revoke", json!({"token": &ada_token}))
        .await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["kind"], "user");
    let after = api
        .get(&ada_token, &format!("/status?sessionId={chat}"))
        .await;
    assert_eq!(code(&after), (401, "unauthorized"));
    let (status, _) = api
        .chat(&ada_token, &chat, "chatter", "m", "still here?")
        .await;
    assert_eq!(status, 401);
    // Bob signs himself out.
    let (status, _) = api
        .post(&bob_token, "/tokens/revoke", json!({"token": &bob_token}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(api.get(&bob_token, "/sessions").await.0, 401);
    let logged: Vec<(String, String, String)> =
        events::audit_with("subject", &format!("user:{ada}"))
            .into_iter()
            .map(|f| {
                (
                    f["event"].clone(),
                    f["principal"].clone(),
                    f["outcome"].clone(),
                )
            })
            .collect();
    let owned = |(a, b, c): (&str, &str, &str)| (a.to_owned(), b.to_owned(), c.to_owned());
    assert_eq!(
        logged[5..],
        [
            owned(("token_mint", "operator", "ok")),
            owned(("token_mint", &format!("user:{ada}"), "forbidden")),
            owned(("token_revoke", "operator", "ok")),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operators_abort_revokes_the_sessions_tokens_and_a_holders_stop_does_not() {
    let harness = Harness::start_with(chat_registry(), keyed_options(KEY)).await;
    let api = Api::new(&harness, KEY);
    // The holder's own stop (the chat's stop button) leaves its token good.
    let (kept, kept_token) = start(&api, KEY).await;
    let stopped = api
        .post(&kept_token, &format!("/chat/{kept}/stop"), json!({}))
        .await;
    assert!(
        stopped.0 == 200 || code(&stopped) == (409, "run_not_active"),
        "{stopped:?}"
    );
    assert_eq!(
        api.get(&kept_token, &format!("/status?sessionId={kept}"))
            .await
            .0,
        200
    );

    // An operator's abort: the holder can no longer restart the session, by any route.
    let (aborted, token) = start(&api, KEY).await;
    assert_eq!(
        api.get(&token, &format!("/status?sessionId={aborted}"))
            .await
            .0,
        200
    );
    let (status, abort) = api
        .post(KEY, "/abort", json!({"sessionId": &aborted}))
        .await;
    assert!(
        status == 200 || abort["code"] == "run_not_active",
        "{abort}"
    );
    let restart = api
        .post(
            &token,
            "/resume",
            json!({"sessionId": &aborted, "mode": "with_message", "message": "start again"}),
        )
        .await;
    assert_eq!(code(&restart), (401, "unauthorized"), "{}", restart.1);
    let (status, _) = api
        .chat(&token, &aborted, "asker_only", "m", "start again")
        .await;
    assert_eq!(status, 401);
    let (_, state) = api.get(KEY, &format!("/status?sessionId={aborted}")).await;
    assert_eq!(state["status"], "failed", "{state}");
    // A session token is revoked by its own request too.
    let (status, revoked) = api
        .post(KEY, "/tokens/revoke", json!({"token": &kept_token}))
        .await;
    assert_eq!((status, revoked["kind"].as_str()), (200, Some("session")));
    assert_eq!(
        api.get(&kept_token, &format!("/status?sessionId={kept}"))
            .await
            .0,
        401
    );
}

/// An operator's start of an `asker_only` session: its id and its session token.
async fn start(api: &Api, key: &str) -> (String, String) {
    let body = json!({"agent": "asker_only", "message": "hi"});
    let (status, started) = api.post(key, "/start", body).await;
    assert_eq!(status, 200, "{started}");
    (
        started["sessionId"].as_str().unwrap().to_owned(),
        started["token"].as_str().unwrap().to_owned(),
    )
}

/// A preflight from `origin` for `POST /chat`.
async fn preflight(harness: &Harness, origin: &str) -> reqwest::Response {
    reqwest::Client::new()
        .request(
            reqwest::Method::OPTIONS,
            format!("http://{}/chat", harness.address),
        )
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browser_origins_are_none_by_default_and_exactly_those_configured() {
    let closed = Harness::server_only_with(chat_registry(), keyed_options(KEY)).await;
    let answer = preflight(&closed, "https://app.example").await;
    assert!(!answer.status().is_success(), "{}", answer.status());
    assert!(
        answer
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );

    let listed = ServerOptions {
        allowed_origins: AllowedOrigins::parse(&["https://app.example".into()]).unwrap(),
        ..keyed_options(KEY)
    };
    let open = Harness::server_only_with(chat_registry(), listed).await;
    let answer = preflight(&open, "https://app.example").await;
    assert!(answer.status().is_success(), "{}", answer.status());
    let headers = answer.headers();
    assert_eq!(
        headers["access-control-allow-origin"],
        "https://app.example"
    );
    assert!(headers.get("access-control-allow-credentials").is_none());
    let methods = headers["access-control-allow-methods"].to_str().unwrap();
    assert!(methods.contains("POST"), "{methods}");
    let other = preflight(&open, "https://evil.example").await;
    assert!(other.headers().get("access-control-allow-origin").is_none());
    // An actual request from the listed origin carries the header; the API still wants a
    // credential.
    let sessions = reqwest::Client::new()
        .get(format!("http://{}/sessions", open.address))
        .header("origin", "https://app.example")
        .send()
        .await
        .unwrap();
    assert_eq!(sessions.status(), 401);
    assert_eq!(
        sessions.headers()["access-control-allow-origin"],
        "https://app.example"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_is_refused_on_every_transport() {
    use baton_client::{Client as _, Error, GrpcClient};
    let harness = Harness::start_with(chat_registry(), keyed_options(KEY)).await;
    let api = Api::new(&harness, KEY);
    let user = fresh();
    let (status, started) = api
        .post(
            KEY,
            "/start",
            json!({"agent": "asker_only", "message": "hi", "userId": &user}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let session = started["sessionId"].as_str().unwrap().to_owned();
    let session_token = started["token"].as_str().unwrap().to_owned();
    let user_token = api.mint(&user, &["asker_only"]).await;
    let grpc =
        |token: &str| GrpcClient::with_bearer(&harness.grpc_address.to_string(), token).unwrap();
    for token in [&session_token, &user_token] {
        let path = format!("/status?sessionId={session}");
        assert_eq!(api.get(token, &path).await.0, 200);
        grpc(token).status(&session).await.unwrap();
    }
    // The user token by its id; the session's tokens by an operator's abort of the session.
    let revoked = api
        .post(KEY, "/tokens/revoke", json!({"token": &user_token}))
        .await;
    assert_eq!(revoked.0, 200, "{revoked:?}");
    let (status, abort) = api
        .post(KEY, "/abort", json!({"sessionId": &session}))
        .await;
    assert!(
        status == 200 || abort["code"] == "run_not_active",
        "{abort}"
    );
    for token in [&session_token, &user_token] {
        let path = format!("/status?sessionId={session}");
        assert_eq!(code(&api.get(token, &path).await), (401, "unauthorized"));
        match grpc(token).status(&session).await {
            Err(Error::Api(refused)) => {
                assert_eq!(
                    refused.code,
                    baton_core::ErrorCode::Unauthorized,
                    "{refused:?}"
                );
            }
            other => panic!("a revoked token was not refused over gRPC: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_mint_is_its_own_token_and_an_operator_revokes_every_token_of_a_user() {
    let harness = Harness::server_only_with(chat_registry(), keyed_options(KEY)).await;
    let api = Api::new(&harness, KEY);
    // The same claims minted twice in the same second: two tokens, each revoked alone.
    let first = api.mint("ada", &["asker_only"]).await;
    let second = api.mint("ada", &["asker_only"]).await;
    assert_ne!(first, second);
    let bob = api.mint("bob", &["asker_only"]).await;
    let (status, revoked) = api
        .post(KEY, "/tokens/revoke", json!({"token": &first}))
        .await;
    assert_eq!((status, revoked["kind"].as_str()), (200, Some("user")));
    assert_eq!(api.get(&first, "/sessions").await.0, 401);
    assert_eq!(api.get(&second, "/sessions").await.0, 200, "its twin holds");

    // Revoking a user's tokens is an operator's: a user token is refused, even for its own.
    let refused = api
        .post(&second, "/tokens/revoke", json!({"userId": "ada"}))
        .await;
    assert_eq!(code(&refused), (403, "forbidden"), "{}", refused.1);
    let bad = api.post(KEY, "/tokens/revoke", json!({"userId": ""})).await;
    assert_eq!(code(&bad), (400, "validation_error"), "{}", bad.1);
    assert_eq!(api.get(&second, "/sessions").await.0, 200);

    // Every token of ada issued so far is refused from the next request; bob's holds, and a
    // token minted after the revocation does too.
    let (status, revoked) = api
        .post(KEY, "/tokens/revoke", json!({"userId": "ada"}))
        .await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["userId"], "ada", "{revoked}");
    assert_eq!(api.get(&second, "/sessions").await.0, 401);
    let (status, _) = api.chat(&second, &fresh(), "asker_only", "m", "hi").await;
    assert_eq!(status, 401);
    assert_eq!(api.get(&bob, "/sessions").await.0, 200);
    let after = api.mint("ada", &["asker_only"]).await;
    assert_eq!(api.get(&after, "/sessions").await.0, 200);
}

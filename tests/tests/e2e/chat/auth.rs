//! The chat routes under built-in auth: an operator key starts a chat, the session's token (what
//! a browser holds) sends its next turns and nothing else, and the demo page needs no credential.

use super::chat_registry;
use baton_tests::Harness;
use baton_worker::{
    ServerOptions,
    auth::{Auth, BuiltinAuth},
};
use serde_json::{Value, json};
use std::{sync::Arc, time::Duration};

const KEY: &str = "operator-key";

async fn send(
    harness: &Harness,
    bearer: Option<&str>,
    chat: &str,
    text: &str,
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("http://{}/chat", harness.address))
        .json(
            &json!({"id": chat, "trigger": "submit-message", "agent": "chatter",
            "messages": [{"id": "m", "role": "user", "parts": [{"type": "text", "text": text}]}]}),
        );
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    request.send().await.unwrap()
}

async fn code(response: reqwest::Response) -> (u16, String) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (status, body["code"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_starts_a_chat_and_its_session_token_sends_the_next_turns_only() {
    let auth = Arc::new(BuiltinAuth::new(
        vec![KEY.into()],
        b"chat secret",
        Duration::from_secs(600),
    ));
    let options = ServerOptions {
        auth: Auth::Builtin(auth.clone()),
        ..Default::default()
    };
    let harness = Harness::start_with(chat_registry(), options).await;
    let chat = uuid::Uuid::new_v4().simple().to_string();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = auth.issue(&chat, now);

    assert_eq!(
        code(send(&harness, None, &chat, "hello").await).await,
        (401, "unauthorized".into())
    );
    assert_eq!(
        code(send(&harness, Some(&token), &chat, "hello").await).await,
        (403, "forbidden".into()),
        "a token holder cannot start a chat"
    );
    let first = send(&harness, Some(KEY), &chat, "hello").await;
    assert_eq!(first.status(), 200);
    assert!(first.text().await.unwrap().ends_with("data: [DONE]\n\n"));
    let next = send(&harness, Some(&token), &chat, "again").await;
    assert_eq!(next.status(), 200);
    assert!(next.text().await.unwrap().contains(r#""delta":"again""#));
    let other = auth.issue("another-chat", now);
    assert_eq!(
        code(send(&harness, Some(&other), &chat, "hi").await).await,
        (403, "session_mismatch".into())
    );
    let page = reqwest::get(format!("http://{}/chat", harness.address))
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    let html = page.text().await.unwrap();
    assert!(html.contains("<title>Baton chat</title>"));
    // Only its own files: no inline script, no CDN, and no credential or API taken from its URL.
    assert!(
        !html.contains("<script>") && !html.contains("https://"),
        "{html}"
    );
    let csp = headers["content-security-policy"].to_str().unwrap();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    let script = reqwest::get(format!("http://{}/chat-assets/chat.js", harness.address))
        .await
        .unwrap();
    assert_eq!(script.status(), 200);
    assert_eq!(script.headers()["x-content-type-options"], "nosniff");
    let script = script.text().await.unwrap();
    assert!(!script.contains("innerHTML") && !script.contains("get('token')"));
    assert!(!script.contains("get('api')"));
    // No demo mode here (a server's options): no token for whoever asks.
    let demo = reqwest::Client::new()
        .post(format!("http://{}/chat/demo-token", harness.address))
        .send()
        .await
        .unwrap();
    assert_eq!(demo.status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_mode_mints_a_user_token_for_the_demo_user_only() {
    let options = ServerOptions {
        demo_user_tokens: true,
        ..baton_tests::keyed_options(KEY)
    };
    let harness = Harness::server_only_with(chat_registry(), options).await;
    let demo: Value = reqwest::Client::new()
        .post(format!("http://{}/chat/demo-token", harness.address))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(demo["userId"], "demo-user");
    let token = demo["token"].as_str().unwrap();
    assert!(token.starts_with("u1."), "{demo}");
    // It sees the demo user's sessions only, and mints nothing.
    let sessions = reqwest::Client::new()
        .get(format!("http://{}/sessions", harness.address))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(sessions.status(), 200);
    let mint = reqwest::Client::new()
        .post(format!("http://{}/tokens", harness.address))
        .bearer_auth(token)
        .json(&json!({"userId": "someone", "agents": ["chatter"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(mint).await, (403, "forbidden".into()));
}

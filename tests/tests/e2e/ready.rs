//! `GET /readyz`: ready (200, each dependency `ok`) when Redis and Temporal answer, without a
//! credential on a keyed server; 503 `store_unavailable` naming Redis once the server's Redis
//! stops answering, while `/healthz` (liveness, reading nothing) still answers 200.

use axum::{
    body::Body,
    http::{Request, StatusCode},
};
use baton_core::{ErrorCode, Store};
use baton_tests::{Harness, agents, procs::RedisServer};
use baton_worker::router;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::Duration;
use tower::ServiceExt;

async fn get(state: &baton_worker::AppState, path: &str) -> (StatusCode, Value) {
    let response = router(state.clone())
        .oneshot(Request::get(path).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_when_redis_and_temporal_answer_and_503_naming_redis_when_it_stops() {
    let options = baton_tests::keyed_options("an operator key of at least thirty-two bytes");
    let harness = Harness::server_only_with(agents::registry(), options).await;
    assert_eq!(
        get(&harness.state, "/readyz").await,
        (StatusCode::OK, json!({"redis": "ok", "temporal": "ok"}))
    );

    let dir = std::env::temp_dir().join(baton_tests::unique("readyz"));
    let mut redis = RedisServer::start(&dir, &[]).await.unwrap();
    let mut state = harness.state.clone();
    state.store = Store::connect_with_timeout(&redis.url(), "ready", Duration::from_millis(500))
        .await
        .unwrap();
    assert_eq!(get(&state, "/readyz").await.0, StatusCode::OK);
    redis.kill();
    let (status, refused) = get(&state, "/readyz").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{refused}");
    assert_eq!(
        refused["code"],
        ErrorCode::StoreUnavailable.as_str(),
        "{refused}"
    );
    let message = refused["error"].as_str().unwrap_or_default();
    assert!(message.contains("Redis"), "{refused}");
    assert!(!message.contains("Temporal"), "{refused}");
    let health = router(state.clone())
        .oneshot(Request::get("/healthz").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let _ = std::fs::remove_dir_all(dir);
}

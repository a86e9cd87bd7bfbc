//! Plain HTTP calls of a test server with a bearer of the test's choosing (an operator key, a
//! user or session token, a service key, or garbage): the status and the JSON answer, for tests
//! of who may do what.

use crate::Harness;
use serde_json::{Value, json};

/// A server's HTTP API, and the operator key that mints its user tokens.
pub struct BearerApi {
    pub base: String,
    http: reqwest::Client,
    operator_key: String,
}

impl BearerApi {
    pub fn new(harness: &Harness, operator_key: &str) -> Self {
        Self {
            base: format!("http://{}", harness.address),
            http: reqwest::Client::new(),
            operator_key: operator_key.to_owned(),
        }
    }

    /// POSTs `body` to `path` with `bearer`; the status and the JSON answer (or `null`).
    pub async fn post(&self, bearer: &str, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(bearer)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// GETs `path` with `bearer`; the status and the JSON answer (or `null`).
    pub async fn get(&self, bearer: &str, path: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(bearer)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// A chat's first (or next) user message `text` (message id `message_id`); the status, and
    /// the stream's text when it is 200.
    pub async fn chat(
        &self,
        bearer: &str,
        chat: &str,
        agent: &str,
        message_id: &str,
        text: &str,
    ) -> (u16, String) {
        let response = self
            .http
            .post(format!("{}/chat", self.base))
            .bearer_auth(bearer)
            .json(
                &json!({"id": chat, "trigger": "submit-message", "agent": agent,
                "messages": [{"id": message_id, "role": "user",
                    "parts": [{"type": "text", "text": text}]}]}),
            )
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }

    /// A user token for `user`, good for `agents` for ten minutes, minted with the operator key.
    pub async fn mint(&self, user: &str, agents: &[&str]) -> String {
        let (status, minted) = self
            .post(
                &self.operator_key,
                "/tokens",
                json!({"userId": user, "agents": agents, "ttlSecs": 600}),
            )
            .await;
        assert_eq!(status, 200, "{minted}");
        minted["token"].as_str().unwrap().to_owned()
    }
}

/// An answer's status and its error `code` (empty for none).
pub fn code(answer: &(u16, Value)) -> (u16, &str) {
    (answer.0, answer.1["code"].as_str().unwrap_or_default())
}

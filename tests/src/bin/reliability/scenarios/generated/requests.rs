//! The request generator: methods, paths, headers and bodies drawn from a seeded generator,
//! most of them near-valid mutations of the API's real requests.

use crate::{agents, rng::Rng};
use serde_json::{Value, json};

/// What the requests may name: the pre-made sessions, their calls and approval ids.
pub struct Known {
    pub sessions: Vec<String>,
    pub calls: Vec<String>,
    pub approvals: Vec<String>,
}

pub struct Request {
    pub method: reqwest::Method,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// The session a chat request names: a `POST /chat` answered 200 may have created it.
    pub chat_id: Option<String>,
}

const ROUTES: &[(&str, &str)] = &[
    ("POST", "/start"),
    ("GET", "/status"),
    ("GET", "/sse"),
    ("POST", "/submit-tool-result"),
    ("POST", "/resume"),
    ("POST", "/interrupt"),
    ("POST", "/abort"),
    ("GET", "/snapshot"),
    ("GET", "/usage"),
    ("GET", "/metrics"),
    ("GET", "/healthz"),
    // The chat routes; `{id}` is a session id (a root's or a child's).
    ("POST", "/chat"),
    ("GET", "/chat/{id}/stream"),
    ("GET", "/chat/{id}/snapshot"),
    ("GET", "/chat"),
    // The operator's routes (sessions search, pending calls, fork, the console): typed 404s
    // until a server has them, then exercised like the rest.
    ("GET", "/sessions"),
    ("GET", "/pending"),
    ("POST", "/fork"),
    ("GET", "/console"),
    // The producer mount of the remote-agent protocol; `{agent}` is an agent type (served or
    // not). Its refusals are the protocol's envelope `{code, error}`.
    ("POST", "/agents/{agent}/start"),
    ("POST", "/agents/{agent}/resume"),
    ("POST", "/agents/{agent}/interrupt"),
    ("POST", "/agents/{agent}/abort"),
    ("GET", "/agents/{agent}/status"),
    ("GET", "/agents/{agent}/snapshot"),
    ("GET", "/agents/{agent}/usage"),
    ("GET", "/agents/{agent}/sse"),
];

/// The mount's start, whose caller names the session it creates.
const MOUNT_START: &str = "/agents/{agent}/start";

fn text(rng: &mut Rng) -> String {
    match rng.below(9) {
        0 => String::new(),
        1 => "go".to_owned(),
        2 => "x".repeat(rng.between(1000, 70_000) as usize),
        3 => "ünïcødé ✓ 🚀".to_owned(),
        4 => "\u{0}\u{1}\n\t\"\\".to_owned(),
        5 => "{{result:ask_user}}".to_owned(),
        6 => "a".repeat(rng.between(1_000_000, 1_200_000) as usize),
        _ => format!("text {}", rng.next_u64()),
    }
}

fn noise(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth > 3 { 5 } else { 8 }) {
        0 => Value::Null,
        1 => json!(rng.chance(1, 2)),
        2 => json!(rng.next_u64()),
        3 => json!(-(rng.below(1000) as i64) as f64 / 3.0),
        4 => json!(text(rng)),
        5 => Value::Array((0..rng.below(4)).map(|_| noise(rng, depth + 1)).collect()),
        6 => {
            let mut object = serde_json::Map::new();
            for i in 0..rng.below(4) {
                object.insert(format!("k{i}"), noise(rng, depth + 1));
            }
            Value::Object(object)
        }
        _ => {
            // Deep nesting.
            let mut value = json!(1);
            for _ in 0..rng.between(10, 200) {
                value = json!([value]);
            }
            value
        }
    }
}

fn session_id(rng: &mut Rng, known: &Known) -> Value {
    match rng.below(8) {
        0..=3 => json!(rng.pick(&known.sessions)),
        4 => json!(format!("{:032x}", rng.next_u64())),
        5 => json!(rng.pick(&["", "*", "../x", "{a}", "a:b", "x}y{z", "\u{0}"])),
        6 => json!("s".repeat(rng.between(100, 5000) as usize)),
        // A child of a tree (`<root>.<32 hex>`), real root or not: the tree's addressing.
        7 if rng.chance(1, 2) => json!(format!(
            "{}.{:016x}{:016x}",
            rng.pick(&known.sessions),
            rng.next_u64(),
            rng.next_u64()
        )),
        _ => noise(rng, 3),
    }
}

fn body(rng: &mut Rng, path: &str, known: &Known) -> Vec<u8> {
    let mut object = serde_json::Map::new();
    match path {
        "/start" => {
            object.insert(
                "agent".into(),
                json!(rng.pick(&[agents::CHATTER, agents::MIXED, "nope", ""])),
            );
            object.insert("message".into(), json!(text(rng)));
            if rng.chance(1, 5) {
                object.insert("sessionId".into(), session_id(rng, known));
            }
        }
        "/submit-tool-result" => {
            if rng.chance(2, 3) {
                let kind = *rng.pick(&["client-tool-result", "approval-response", "other"]);
                object.insert("kind".into(), json!(kind));
            }
            object.insert("sessionId".into(), session_id(rng, known));
            let call = match rng.below(3) {
                0 => rng.pick(&known.calls).clone(),
                1 => format!("call_{}_{}", rng.below(4), rng.below(5)),
                _ => text(rng),
            };
            object.insert("toolCallId".into(), json!(call));
            match rng.below(4) {
                0 => {
                    object.insert("result".into(), noise(rng, 0));
                }
                1 => {
                    object.insert(
                        "error".into(),
                        json!({"code": text(rng), "message": text(rng)}),
                    );
                }
                _ => {
                    let approval = if rng.chance(1, 2) {
                        rng.pick(&known.approvals).clone()
                    } else {
                        text(rng)
                    };
                    object.insert("approvalId".into(), json!(approval));
                    object.insert(
                        "approved".into(),
                        if rng.chance(3, 4) {
                            json!(rng.chance(1, 2))
                        } else {
                            noise(rng, 2)
                        },
                    );
                    if rng.chance(1, 3) {
                        object.insert("arguments".into(), noise(rng, 1));
                    }
                }
            }
        }
        "/chat" => chat_body(rng, known, &mut object),
        MOUNT_START => {
            object.insert("sessionId".into(), session_id(rng, known));
            object.insert("message".into(), json!(text(rng)));
            if rng.chance(1, 4) {
                object.insert("userId".into(), noise(rng, 2));
            }
            if rng.chance(1, 4) {
                object.insert("tags".into(), noise(rng, 2));
            }
        }
        "/resume" => {
            object.insert("sessionId".into(), session_id(rng, known));
            object.insert(
                "mode".into(),
                json!(rng.pick(&["continue", "with_message", "from_checkpoint", "x"])),
            );
            if rng.chance(1, 2) {
                object.insert("message".into(), json!(text(rng)));
            }
            if rng.chance(1, 3) {
                object.insert(
                    "checkpointId".into(),
                    if rng.chance(1, 2) {
                        json!(rng.below(4))
                    } else {
                        noise(rng, 2)
                    },
                );
            }
            if rng.chance(1, 3) {
                object.insert("abandonPending".into(), noise(rng, 3));
            }
        }
        _ => {
            object.insert("sessionId".into(), session_id(rng, known));
        }
    }
    // Mutations: drop a field, add an unknown one, or change one's type.
    if rng.chance(1, 4) && !object.is_empty() {
        let key = object
            .keys()
            .nth(rng.below(object.len() as u64) as usize)
            .cloned();
        if let Some(key) = key {
            if rng.chance(1, 2) {
                object.remove(&key);
            } else {
                object.insert(key, noise(rng, 1));
            }
        }
    }
    if rng.chance(1, 10) {
        object.insert("unexpected".into(), noise(rng, 1));
    }
    let valid = serde_json::to_vec(&Value::Object(object)).unwrap_or_default();
    match rng.below(20) {
        0 => valid[..rng.below(valid.len() as u64) as usize].to_vec(),
        1 => (0..rng.below(300)).map(|_| rng.below(256) as u8).collect(),
        2 => Vec::new(),
        3 => serde_json::to_vec(&noise(rng, 0)).unwrap_or_default(),
        _ => valid,
    }
}

/// A `useChat` request: a trigger, an agent, and messages whose parts are text or answers to the
/// known calls (outputs, approval responses), mutated like every body.
fn chat_body(rng: &mut Rng, known: &Known, object: &mut serde_json::Map<String, Value>) {
    object.insert("id".into(), session_id(rng, known));
    object.insert(
        "trigger".into(),
        json!(rng.pick(&["submit-message", "regenerate-message", "x"])),
    );
    if rng.chance(3, 4) {
        object.insert(
            "agent".into(),
            json!(rng.pick(&[agents::CHATTER, agents::MIXED, "nope"])),
        );
    }
    let part = |rng: &mut Rng| match rng.below(4) {
        0 => json!({"type": "text", "text": text(rng)}),
        1 => json!({"type": "tool-ask_user", "toolCallId": rng.pick(&known.calls),
            "state": "output-available", "input": noise(rng, 2), "output": noise(rng, 1)}),
        2 => json!({"type": "tool-transfer", "toolCallId": rng.pick(&known.calls),
            "state": "approval-responded", "input": {},
            "approval": {"id": rng.pick(&known.approvals), "approved": rng.chance(1, 2)}}),
        _ => noise(rng, 2),
    };
    let messages: Vec<Value> = (0..rng.below(4))
        .map(|i| {
            let parts: Vec<Value> = (0..rng.between(1, 3)).map(|_| part(rng)).collect();
            json!({"id": format!("m{i}"), "role": rng.pick(&["user", "assistant", "system"]),
                "parts": parts})
        })
        .collect();
    object.insert("messages".into(), json!(messages));
}

fn query(rng: &mut Rng, known: &Known) -> String {
    let mut parts = Vec::new();
    if rng.chance(7, 8) {
        let id = match session_id(rng, known) {
            Value::String(s) => s,
            other => other.to_string(),
        };
        let id: String = url_encode(&id);
        parts.push(format!("sessionId={id}"));
    }
    if rng.chance(1, 2) {
        let from = match rng.below(4) {
            0 => "-1".to_owned(),
            1 => "abc".to_owned(),
            2 => u64::MAX.to_string(),
            _ => rng.below(30).to_string(),
        };
        parts.push(format!("fromSequence={from}"));
    }
    if rng.chance(1, 10) {
        parts.push(format!(
            "{}={}",
            url_encode(&text(rng)),
            url_encode(&text(rng))
        ));
    }
    parts.join("&")
}

fn url_encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes().take(10_000) {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

pub fn request(rng: &mut Rng, known: &Known) -> Request {
    let (method, path) = if rng.chance(17, 20) {
        let (method, path) = *rng.pick(ROUTES);
        (method.to_owned(), path.to_owned())
    } else {
        let path = rng
            .pick(&[
                "/",
                "/start/",
                "//start",
                "/x",
                "/sse/../start",
                "/%00",
                "/start?x=1",
            ])
            .to_string();
        (rng.pick(&["GET", "POST"]).to_string(), path)
    };
    let method = if rng.chance(1, 15) {
        rng.pick(&["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "GET", "POST"])
            .to_string()
    } else {
        method
    };
    let mut headers = Vec::new();
    if rng.chance(9, 10) {
        let content_type = *rng.pick(&[
            "application/json",
            "application/json",
            "application/json; charset=utf-8",
            "text/plain",
            "multipart/form-data; boundary=x",
            "application/x-www-form-urlencoded",
            "",
        ]);
        headers.push(("content-type".to_owned(), content_type.to_owned()));
    }
    if rng.chance(1, 20) {
        headers.push((
            "authorization".to_owned(),
            rng.pick(&["Bearer x", "Basic YTpi", "Bearer "]).to_string(),
        ));
    }
    if rng.chance(1, 30) {
        headers.push(("content-encoding".to_owned(), "gzip".to_owned()));
    }
    if rng.chance(1, 30) {
        headers.push((
            "last-event-id".to_owned(),
            rng.pick(&["5", "-1", "x"]).to_string(),
        ));
    }
    let route = path.split('?').next().unwrap_or("").to_owned();
    let path = if route.contains("{id}") {
        let id = match session_id(rng, known) {
            Value::String(s) => s,
            other => other.to_string(),
        };
        route.replace("{id}", &url_encode(&id))
    } else if method == "GET" && ROUTES.iter().any(|(_, p)| *p == route) {
        format!("{path}?{}", query(rng, known))
    } else {
        path
    };
    let agent = *rng.pick(&[agents::CHATTER, agents::MIXED, "nope"]);
    let path = path.replace("{agent}", agent);
    let body = (method != "GET" || rng.chance(1, 20)).then(|| body(rng, &route, known));
    // A chat request's id, or a mount start's session id, if its body has one: the session a
    // 200 may have created.
    let id_field = match route.as_str() {
        "/chat" => Some("id"),
        MOUNT_START => Some("sessionId"),
        _ => None,
    };
    let chat_id = id_field.zip(body.as_deref()).and_then(|(field, body)| {
        let body = serde_json::from_slice::<Value>(body).ok()?;
        body[field].as_str().map(str::to_owned)
    });
    Request {
        method: reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::GET),
        path,
        headers,
        body,
        chat_id,
    }
}

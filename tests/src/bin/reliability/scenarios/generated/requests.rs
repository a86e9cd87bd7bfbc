//! The request generator: methods, paths, headers, bodies and credentials drawn from a seeded
//! generator, most of them near-valid mutations of the API's real requests.

use super::principals::{CALLER_SESSION, Credential, Principals, USER_A, USER_B};
use crate::{agents, rng::Rng};
use serde_json::{Value, json};

/// What the requests may name: the pre-made sessions, their calls and approval ids; and who
/// they may speak as.
pub struct Known {
    pub sessions: Vec<String>,
    pub calls: Vec<String>,
    pub approvals: Vec<String>,
    pub principals: Principals,
}

pub struct Request {
    pub method: reqwest::Method,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// The session a chat request names: a `POST /chat` answered 200 may have created it.
    pub chat_id: Option<String>,
    pub credential: Credential,
    /// The route the request was made from (`/chat/{id}/stream`, `/agents/{agent}/start`, or
    /// one of the paths off every route).
    pub route: String,
    /// The session ids the server reads from it: the path's, the query's on a `GET`, the
    /// body's otherwise.
    pub named: Vec<String>,
}

impl Request {
    /// The pages anyone may load, without a credential.
    pub fn is_public(&self) -> bool {
        let get = self.method == reqwest::Method::GET || self.method == reqwest::Method::HEAD;
        matches!(self.route.as_str(), "/healthz" | "/console") || (get && self.route == "/chat")
    }

    /// Whether it goes to the producer mount, the service key's one surface.
    pub fn is_on_mount(&self) -> bool {
        self.route.starts_with("/agents/")
    }

    /// `/sessions` and `/pending`, which answer a caller an empty page for a root outside its
    /// scope.
    pub fn is_listing(&self) -> bool {
        matches!(self.route.as_str(), "/sessions" | "/pending")
    }
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
    ("POST", "/chat/{id}/stop"),
    ("GET", "/chat"),
    // The operator's routes (sessions search, pending calls, fork, the console): typed 404s
    // until a server has them, then exercised like the rest.
    ("GET", "/sessions"),
    ("GET", "/pending"),
    ("POST", "/fork"),
    ("GET", "/console"),
    // Minting user tokens: operator keys only.
    ("POST", "/tokens"),
    // The producer mount of the remote-agent protocol; `{agent}` is an agent type (served or
    // not). Its refusals are the protocol's envelope `{code, error}`.
    ("POST", "/agents/{agent}/start"),
    ("POST", "/agents/{agent}/resume"),
    ("POST", "/agents/{agent}/submit"),
    ("POST", "/agents/{agent}/interrupt"),
    ("POST", "/agents/{agent}/abort"),
    ("GET", "/agents/{agent}/status"),
    ("GET", "/agents/{agent}/snapshot"),
    ("GET", "/agents/{agent}/usage"),
    ("GET", "/agents/{agent}/sse"),
];

/// The mount's start, whose caller names the session it creates.
const MOUNT_START: &str = "/agents/{agent}/start";
/// The mount's submit, the API's submit on a session the mount started.
const MOUNT_SUBMIT: &str = "/agents/{agent}/submit";

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
        "/submit-tool-result" | MOUNT_SUBMIT => {
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
            } else if rng.chance(1, 3) {
                object.insert("userId".into(), json!(USER_A));
            }
            if rng.chance(1, 4) {
                object.insert("tags".into(), noise(rng, 2));
            }
            match rng.below(4) {
                0 | 1 => {
                    object.insert("callerSessionId".into(), json!(CALLER_SESSION));
                }
                2 => {
                    object.insert("callerSessionId".into(), session_id(rng, known));
                }
                _ => {}
            }
        }
        "/tokens" => {
            object.insert("userId".into(), json!(rng.pick(&[USER_A, USER_B, "", "x"])));
            object.insert(
                "agents".into(),
                json!(rng.pick(&[
                    vec![agents::CHATTER],
                    vec![agents::CHATTER, agents::MIXED],
                    vec!["nope"],
                    vec![],
                ])),
            );
            if rng.chance(1, 2) {
                object.insert("ttlSecs".into(), json!(rng.pick(&[60, 900, 59, 100_000])));
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

/// A session id as the text a path or query carries.
fn session_text(rng: &mut Rng, known: &Known) -> String {
    match session_id(rng, known) {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// A query string being made, and the session ids it names.
#[derive(Default)]
struct Query {
    parts: Vec<String>,
    named: Vec<String>,
}

impl Query {
    /// Adds `name=<a session id>`.
    fn session(&mut self, rng: &mut Rng, known: &Known, name: &str) {
        let id = session_text(rng, known);
        self.parts.push(format!("{name}={}", url_encode(&id)));
        self.named.push(id);
    }

    fn finish(self) -> (String, Vec<String>) {
        (self.parts.join("&"), self.named)
    }
}

/// A query string and the session ids it names.
fn query(rng: &mut Rng, known: &Known) -> (String, Vec<String>) {
    let mut query = Query::default();
    if rng.chance(7, 8) {
        query.session(rng, known, "sessionId");
    }
    if rng.chance(1, 2) {
        let from = match rng.below(4) {
            0 => "-1".to_owned(),
            1 => "abc".to_owned(),
            2 => u64::MAX.to_string(),
            _ => rng.below(30).to_string(),
        };
        query.parts.push(format!("fromSequence={from}"));
    }
    if rng.chance(1, 10) {
        query.parts.push(format!(
            "{}={}",
            url_encode(&text(rng)),
            url_encode(&text(rng))
        ));
    }
    query.finish()
}

/// A search of `/sessions` or `/pending`: mostly a tree (`root=`, the known sessions most
/// often) and the users' ids, sometimes filters a search refuses.
fn search_query(rng: &mut Rng, known: &Known) -> (String, Vec<String>) {
    let mut query = Query::default();
    if rng.chance(2, 3) {
        query.session(rng, known, "root");
    }
    if rng.chance(1, 3) {
        let user = rng.pick(&[USER_A, USER_B, "", "\u{0}"]).to_string();
        query.parts.push(format!("userId={}", url_encode(&user)));
    }
    if rng.chance(1, 4) {
        query.parts.push(format!(
            "status={}",
            rng.pick(&["active", "suspended_client_tool", "completed", "x"])
        ));
    }
    if rng.chance(1, 5) {
        query.parts.push("awaiting=person".to_owned());
    }
    if rng.chance(1, 5) {
        query.parts.push(format!(
            "includeChildren={}",
            rng.pick(&["true", "false", "x"])
        ));
    }
    if rng.chance(1, 5) {
        query.parts.push(format!(
            "limit={}",
            rng.pick(&["1", "20", "100", "0", "1000"])
        ));
    }
    if rng.chance(1, 10) {
        query
            .parts
            .push(format!("cursor={}", url_encode(&text(rng))));
    }
    if rng.chance(1, 10) {
        // An unknown parameter: `validation_error`.
        query.session(rng, known, "sessionId");
    }
    query.finish()
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
    let mut credential = known.principals.pick(rng);
    let (method, path) = if credential == Credential::Service && rng.chance(1, 2) {
        // Half of a service key's requests go to its own surface, the mount.
        let mount: Vec<_> = ROUTES
            .iter()
            .filter(|(_, path)| path.starts_with("/agents/"))
            .collect();
        let (method, path) = **rng.pick(&mount);
        (method.to_owned(), path.to_owned())
    } else if rng.chance(17, 20) {
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
        credential = Credential::Garbage;
    } else if let Some(value) = known.principals.header(credential) {
        headers.push(("authorization".to_owned(), value));
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
    let mut named = Vec::new();
    let path = if route.contains("{id}") {
        let id = session_text(rng, known);
        let path = route.replace("{id}", &url_encode(&id));
        named.push(id);
        path
    } else if method == "GET" && ROUTES.iter().any(|(_, p)| *p == route) {
        let (query, ids) = if matches!(route.as_str(), "/sessions" | "/pending") {
            search_query(rng, known)
        } else {
            query(rng, known)
        };
        named.extend(ids);
        format!("{path}?{query}")
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
    let parsed = body
        .as_deref()
        .and_then(|body| serde_json::from_slice::<Value>(body).ok());
    let chat_id = id_field
        .zip(parsed.as_ref())
        .and_then(|(field, body)| body[field].as_str().map(str::to_owned));
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::GET);
    // A route with the id in its path is read from there; any other `GET` from its query, and
    // anything else from its body.
    if !route.contains("{id}")
        && method != reqwest::Method::GET
        && method != reqwest::Method::HEAD
        && let Some(body) = &parsed
    {
        let field = if route == "/chat" { "id" } else { "sessionId" };
        named.extend(body[field].as_str().map(str::to_owned));
    }
    Request {
        method,
        path,
        headers,
        body,
        chat_id,
        credential,
        route,
        named,
    }
}

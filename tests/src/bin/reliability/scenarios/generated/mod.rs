//! Generated HTTP requests (a seeded generator over methods, paths, headers, bodies and
//! credentials, most of them near-valid mutations of real requests: the API's routes, the chat
//! routes, a tree's child ids, the operator's routes, the producer mount) against a keyed server
//! holding a few real sessions of an operator's, of a user's and of the mount's service: no answer
//! may be a 5xx, every 4xx is the one error body, no success may act on or show a session its
//! credential does not own (`principals.rs`), no key may be written outside the sessions the
//! requests could touch (the pre-made ones and those their own starts and chats created), and the
//! server's memory stays flat.

mod principals;
mod requests;

use principals::{CALLER_SESSION, Principals, USER_A, USER_B};
use requests::{Known, request};

use super::Fleet;
use crate::{
    Campaign, agents,
    load::{Driver, Tally, lock},
    procs::{BatonConfig, RedisServer, rss_kib},
    rng::Rng,
    roles,
    table::Row,
};
use baton_client::{Client as _, HttpClient};
use baton_core::{api::StartRequest, store::index_long_id};
use futures::StreamExt;
use serde_json::{Value, json};
use std::{
    collections::{BTreeMap, HashSet},
    sync::Mutex,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

/// Who starts a known session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Starter {
    /// The operator, for nobody in particular.
    Operator,
    /// The operator, with user A's `userId`.
    OperatorForUserA,
    /// User A's own token.
    UserA,
    /// The service key, through the producer mount, with user A's `userId` and a caller
    /// session: the service's, not user A's.
    Mount,
}

/// A user token minted with the operator key.
async fn mint(
    http: &reqwest::Client,
    base: &str,
    user_id: &str,
    agents: &[&str],
) -> anyhow::Result<String> {
    let answer: Value = http
        .post(format!("{base}/tokens"))
        .bearer_auth(roles::OPERATOR_KEY)
        .json(&json!({"userId": user_id, "agents": agents}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    answer["token"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("POST /tokens answered no token: {answer}"))
}

/// Mints the users' tokens and makes a few real sessions for the requests to name: suspended
/// `mixed` sessions (with calls and approval ids) and ended `chatter` ones, of the operator's,
/// of user A's and of the mount's service.
async fn known_sessions(fleet: &Fleet, driver: &Driver<'_>) -> anyhow::Result<Known> {
    let client = fleet.client(0);
    let base = fleet.servers[0].base_url();
    let http = reqwest::Client::new();
    let both = [agents::CHATTER, agents::MIXED];
    let mut principals = Principals {
        user_a: mint(&http, &base, USER_A, &both).await?,
        user_b: mint(&http, &base, USER_B, &both).await?,
        producer_user: mint(&http, &base, USER_A, &both).await?,
        session_tokens: Vec::new(),
        sessions: HashSet::new(),
        of_user_a: HashSet::new(),
        of_service: HashSet::new(),
    };
    let user_a = HttpClient::with_bearer(base.as_str(), &principals.user_a)?;
    let (mut sessions, mut calls, mut approvals) = (Vec::new(), Vec::new(), Vec::new());
    use Starter::*;
    let starts = [
        (agents::MIXED, Operator),
        (agents::MIXED, OperatorForUserA),
        (agents::MIXED, UserA),
        (agents::MIXED, Mount),
        (agents::CHATTER, Operator),
        (agents::CHATTER, UserA),
        (agents::CHATTER, Mount),
    ];
    for (agent, starter) in starts {
        let message = if agent == agents::MIXED {
            "go"
        } else {
            "hello"
        };
        let (session, token) = match starter {
            Operator => {
                let started = client.start(agent, message).await?;
                (started.session_id, started.token)
            }
            OperatorForUserA => {
                let started = client
                    .start_request(StartRequest {
                        user_id: Some(USER_A.to_owned()),
                        ..StartRequest::new(agent, message)
                    })
                    .await?;
                (started.session_id, started.token)
            }
            UserA => {
                let started = user_a.start(agent, message).await?;
                (started.session_id, started.token)
            }
            Mount => {
                // Unique across runs: the Temporal dev server is shared, and a workflow id of an
                // earlier run's would answer the start `409`.
                let session = baton_tests::unique("mount");
                http.post(format!("{base}/agents/{agent}/start"))
                    .bearer_auth(roles::SERVICE_KEY)
                    .json(&json!({"sessionId": session, "message": message,
                        "userId": USER_A, "callerSessionId": CALLER_SESSION}))
                    .send()
                    .await?
                    .error_for_status()?;
                (session, None)
            }
        };
        match starter {
            Operator => {}
            OperatorForUserA | UserA => {
                principals.of_user_a.insert(session.clone());
            }
            Mount => {
                principals.of_service.insert(session.clone());
            }
        }
        principals
            .session_tokens
            .extend(token.map(|token| (session.clone(), token)));
        let (_, awaited) = driver.until_suspended(&session).await?;
        calls.extend(awaited);
        if agent == agents::MIXED {
            let mut follow = client.follow(&session, 0);
            while let Some(Ok(chunk)) = follow.next().await {
                match chunk.kind {
                    baton_core::ChunkKind::ToolApprovalRequest { approval_id, .. } => {
                        approvals.push(approval_id)
                    }
                    baton_core::ChunkKind::Suspended { .. } => break,
                    _ => {}
                }
            }
        }
        principals.sessions.insert(session.clone());
        sessions.push(session);
    }
    Ok(Known {
        sessions,
        calls,
        approvals,
        principals,
    })
}

pub async fn run(campaign: &Campaign) -> anyhow::Result<Row> {
    let total = campaign.scale(100_000, 5_000);
    let mut row = Row::new("generated HTTP requests");
    // The one keyed fleet of the campaign: its requests carry the credentials of several
    // principals.
    let redis = RedisServer::start(&campaign.dir, &[]).await?;
    let config = BatonConfig {
        keyed: true,
        ..campaign.config(&redis.url(), &campaign.temporal_address)
    };
    let fleet = Fleet::on(campaign, redis, config, 1, 1).await?;
    let tally = Tally::default();
    let client = fleet.client(0);
    let driver = Driver::new(&client, &tally);
    let known = known_sessions(&fleet, &driver).await?;
    let server_pid = fleet.servers[0].pid().unwrap_or(0);
    let base = fleet.servers[0].base_url();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let created = Mutex::new(HashSet::new());
    let server_errors = Mutex::new(Vec::new());
    let untyped = Mutex::new(Vec::new());
    let trespasses = Mutex::new(Vec::new());
    // Per credential: requests, successes, and requests naming a known session not its own.
    let by_credential: Mutex<BTreeMap<&str, [u64; 3]>> = Mutex::new(BTreeMap::new());
    let hung = AtomicU64::new(0);
    let closed = AtomicU64::new(0);
    let hung_examples = Mutex::new(Vec::new());
    let sent = AtomicU64::new(0);
    let early_rss = AtomicU64::new(0);
    let mut rng = Rng::new(campaign.seed ^ 5);
    let requests = (0..total).map(|_| request(&mut rng, &known));
    futures::stream::iter(requests)
        .for_each_concurrent(32, |request| {
            let (
                http,
                base,
                created,
                server_errors,
                untyped,
                hung,
                sent,
                early_rss,
                hung_examples,
                closed,
                trespasses,
                by_credential,
                principals,
            ) = (
                &http,
                &base,
                &created,
                &server_errors,
                &untyped,
                &hung,
                &sent,
                &early_rss,
                &hung_examples,
                &closed,
                &trespasses,
                &by_credential,
                &known.principals,
            );
            async move {
                let mut builder =
                    http.request(request.method.clone(), format!("{base}{}", request.path));
                for (name, value) in &request.headers {
                    builder = builder.header(name, value);
                }
                // The streams: `/sse`, and the chat routes' answers.
                let is_sse = request.path.starts_with("/sse")
                    || (request.path.starts_with("/chat")
                        && (request.method == reqwest::Method::POST
                            || request.path.ends_with("/stream")));
                if let Some(body) = request.body.clone() {
                    builder = builder.body(body);
                }
                let outcome = tokio::time::timeout(Duration::from_secs(20), async {
                    let response = builder.send().await?;
                    let status = response.status().as_u16();
                    // A stream is judged by its status; its body is left unread (a refusal's is
                    // read).
                    let body = if is_sse && status < 400 {
                        Default::default()
                    } else {
                        response.bytes().await?
                    };
                    Ok::<_, reqwest::Error>((status, body))
                })
                .await;
                match outcome {
                    Ok(Ok((status, body))) => {
                        if status >= 500 {
                            let sent = request
                                .body
                                .as_deref()
                                .map(|b| {
                                    String::from_utf8_lossy(&b[..b.len().min(120)]).into_owned()
                                })
                                .unwrap_or_default();
                            lock(server_errors).push(format!(
                                "{} {} → {status} {} (body sent: {sent})",
                                request.method,
                                &request.path[..request.path.len().min(80)],
                                String::from_utf8_lossy(&body[..body.len().min(200)])
                            ));
                        }
                        if (400..500).contains(&status)
                            && request.method != reqwest::Method::HEAD
                            && serde_json::from_slice::<baton_core::ApiError>(&body).is_err()
                            && !(request.path.starts_with("/agents/")
                                && serde_json::from_slice::<baton_core::remote::ErrorBody>(&body)
                                    .is_ok())
                        {
                            lock(untyped).push(format!(
                                "{} {} → {status} {:?}",
                                request.method,
                                &request.path[..request.path.len().min(80)],
                                String::from_utf8_lossy(&body[..body.len().min(120)])
                            ));
                        }
                        {
                            let mut counts = lock(by_credential);
                            let counts = counts.entry(request.credential.label()).or_default();
                            counts[0] += 1;
                            counts[1] += u64::from((200..300).contains(&status));
                            counts[2] += u64::from(principals.names_foreign(&request));
                        }
                        if let Some(why) = principals.trespass(&request, status, &body) {
                            lock(trespasses).push(format!(
                                "{} {} as {} → {status}: {why}",
                                request.method,
                                &request.path[..request.path.len().min(100)],
                                request.credential.label(),
                            ));
                        }
                        if status == 200
                            && let Some(chat_id) = &request.chat_id
                        {
                            lock(created).insert(chat_id.clone());
                        }
                        if status == 200
                            && let Ok(answer) = serde_json::from_slice::<Value>(&body)
                            && let Some(id) = answer["sessionId"].as_str()
                        {
                            lock(created).insert(id.to_owned());
                        }
                    }
                    Ok(Err(_)) => {
                        // The server closed a kept-alive connection as the client reused it
                        // (hyper's IncompleteMessage): a transport race, not an answer.
                        closed.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {
                        let why = "no answer in 20 s";
                        hung.fetch_add(1, Ordering::Relaxed);
                        let headers: Vec<String> = request
                            .headers
                            .iter()
                            .map(|(n, v)| format!("{n}: {v}"))
                            .collect();
                        let sent = request
                            .body
                            .as_deref()
                            .map(|b| String::from_utf8_lossy(&b[..b.len().min(120)]).into_owned())
                            .unwrap_or_default();
                        lock(hung_examples).push(format!(
                            "{why}: {} {} [{}] (body sent: {sent})",
                            request.method,
                            &request.path[..request.path.len().min(120)],
                            headers.join(", ")
                        ));
                    }
                }
                let done = sent.fetch_add(1, Ordering::Relaxed) + 1;
                if done == total as u64 / 10 {
                    early_rss.store(rss_kib(server_pid).unwrap_or(0), Ordering::Relaxed);
                }
            }
        })
        .await;
    let late_rss = rss_kib(server_pid).unwrap_or(0);
    let early_rss = early_rss.load(Ordering::Relaxed);

    // Every key belongs to a session the requests could touch.
    let mut allowed: HashSet<String> = known.sessions.iter().cloned().collect();
    allowed.extend(lock(&created).iter().cloned());
    let redis = redis::Client::open(fleet.config.redis_url.as_str())?;
    let mut connection = redis.get_multiplexed_async_connection().await?;
    let keys = crate::scan(&mut connection, "*").await?;
    // The one key outside every session, the deadline index, may only name allowed sessions.
    let deadline_index = format!("{}:deadlineIndex", fleet.config.prefix);
    let indexed: Vec<String> = redis::cmd("ZRANGE")
        .arg(&deadline_index)
        .arg(0)
        .arg(-1)
        .query_async(&mut connection)
        .await?;
    // The search index's shards and the callback index are shared by every session of the
    // prefix: their keys are allowed, and every session they name must be.
    let search_index = format!("{}:index:", fleet.config.prefix);
    let callback_index = format!("{}:callbackIndex", fleet.config.prefix);
    let mut named = Vec::new();
    for key in keys.iter().filter(|key| key.starts_with(&search_index)) {
        if key.ends_with(":records") {
            let sessions: Vec<String> = redis::cmd("HKEYS")
                .arg(key)
                .query_async(&mut connection)
                .await?;
            named.extend(sessions.into_iter().map(|session| (key.clone(), session)));
        }
    }
    let called: Vec<String> = redis::cmd("ZRANGE")
        .arg(&callback_index)
        .arg(0)
        .arg(-1)
        .query_async(&mut connection)
        .await?;
    named.extend(
        called
            .into_iter()
            .map(|session| (callback_index.clone(), session)),
    );
    let outside: Vec<String> = keys
        .iter()
        .filter(|key| **key != deadline_index)
        .filter(|key| !key.starts_with(&search_index) && **key != callback_index)
        .filter(|key| {
            let root = key
                .strip_prefix(&format!("{}:{{", fleet.config.prefix))
                .and_then(|rest| rest.split('}').next());
            !root.is_some_and(|root| allowed.contains(root))
        })
        .cloned()
        .chain(
            indexed
                .into_iter()
                .filter(|member| {
                    // Members name sessions in the index's short form (or the old long one).
                    let root = member.split('|').next().map(index_long_id);
                    !root.is_some_and(|root| allowed.contains(&root))
                })
                .map(|member| format!("{deadline_index} member {member}")),
        )
        .chain(
            named
                .into_iter()
                .filter(|(_, session)| {
                    let session = index_long_id(session);
                    let root = session.split('.').next().unwrap_or_default();
                    !allowed.contains(root)
                })
                .map(|(key, session)| format!("{key} names {session}")),
        )
        .collect();
    fleet.check(&tally, &mut row).await?;
    let server_errors = lock(&server_errors).clone();
    row.server_errors = server_errors.len() as u64;
    row.runs = format!("{total} requests");
    row.faults = format!(
        "generated requests (seed {}), 32 in flight",
        campaign.seed ^ 5
    );
    row.require(
        server_errors.is_empty(),
        format!(
            "{} answers 5xx, e.g. {}",
            server_errors.len(),
            server_errors.first().map(String::as_str).unwrap_or("")
        ),
    );
    row.require(
        outside.is_empty(),
        format!(
            "{} keys outside the allowed sessions, e.g. {:?}",
            outside.len(),
            outside.first()
        ),
    );
    let untyped = lock(&untyped).clone();
    row.require(
        untyped.is_empty(),
        format!(
            "{} refusals without the error body, e.g. {}",
            untyped.len(),
            untyped.first().map(String::as_str).unwrap_or("")
        ),
    );
    let trespasses = lock(&trespasses).clone();
    row.require(
        trespasses.is_empty(),
        format!(
            "{} successes outside their credential's sessions, e.g. {}",
            trespasses.len(),
            trespasses
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(" | ")
        ),
    );
    let hung = hung.load(Ordering::Relaxed);
    row.require(
        hung == 0,
        format!(
            "{hung} requests got no answer, e.g. {}",
            lock(&hung_examples)
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(" | ")
        ),
    );
    let flat = late_rss <= (early_rss * 3 / 2).max(early_rss + 32 * 1024);
    row.require_timed(
        campaign,
        flat,
        format!("server RSS grew from {early_rss} KiB to {late_rss} KiB"),
    );
    row.note(format!(
        "by credential (requests / 2xx / naming a known session not its own): {}",
        lock(&by_credential)
            .iter()
            .map(|(credential, [sent, succeeded, foreign])| {
                format!("{credential} {sent} / {succeeded} / {foreign}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    ));
    row.note(format!(
        "server RSS {} MiB after 10% of the requests, {} MiB after all; {} sessions created by generated starts; {} keys checked; {} connections closed under a request",
        early_rss / 1024,
        late_rss / 1024,
        lock(&created).len(),
        keys.len(),
        closed.load(Ordering::Relaxed)
    ));
    Ok(row)
}

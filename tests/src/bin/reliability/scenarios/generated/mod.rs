//! Generated HTTP requests (a seeded generator over methods, paths, headers and bodies, most of
//! them near-valid mutations of real requests: the API's routes, the chat routes, a tree's child
//! ids, the operator's routes) against a server holding a few real sessions: no answer may be a
//! 5xx, every 4xx is the one error body, no key may be written outside the sessions the requests
//! could touch (the pre-made ones and those their own `/start`s and chats created), and the
//! server's memory stays flat.

mod requests;

use requests::{Known, request};

use super::Fleet;
use crate::{
    Campaign, agents,
    load::{Driver, Tally, lock},
    procs::rss_kib,
    rng::Rng,
    table::Row,
};
use baton_client::Client as _;
use baton_core::store::index_long_id;
use futures::StreamExt;
use serde_json::Value;
use std::{
    collections::HashSet,
    sync::Mutex,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

/// Makes a few real sessions for the requests to name: suspended `mixed` sessions (with calls and
/// approval ids) and ended `chatter` ones.
async fn known_sessions(fleet: &Fleet, driver: &Driver<'_>) -> anyhow::Result<Known> {
    let client = fleet.client(0);
    let mut known = Known {
        sessions: Vec::new(),
        calls: Vec::new(),
        approvals: Vec::new(),
    };
    for _ in 0..4 {
        let session = client.start(agents::MIXED, "go").await?.session_id;
        let (_, calls) = driver.until_suspended(&session).await?;
        known.calls.extend(calls);
        let mut follow = client.follow(&session, 0);
        while let Some(Ok(chunk)) = follow.next().await {
            match chunk.kind {
                baton_core::ChunkKind::ToolApprovalRequest { approval_id, .. } => {
                    known.approvals.push(approval_id)
                }
                baton_core::ChunkKind::Suspended { .. } => break,
                _ => {}
            }
        }
        known.sessions.push(session);
    }
    for _ in 0..2 {
        let session = client.start(agents::CHATTER, "hello").await?.session_id;
        let (_, _) = driver.until_suspended(&session).await?;
        known.sessions.push(session);
    }
    Ok(known)
}

pub async fn run(campaign: &Campaign) -> anyhow::Result<Row> {
    let total = campaign.scale(100_000, 5_000);
    let mut row = Row::new("generated HTTP requests");
    let fleet = Fleet::start(campaign, &[], 1, 1).await?;
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
        "server RSS {} MiB after 10% of the requests, {} MiB after all; {} sessions created by generated starts; {} keys checked; {} connections closed under a request",
        early_rss / 1024,
        late_rss / 1024,
        lock(&created).len(),
        keys.len(),
        closed.load(Ordering::Relaxed)
    ));
    Ok(row)
}

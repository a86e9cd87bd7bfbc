//! A session suspended before the indexes' short form (issue 27): its search index entry and its
//! deadline index member rewritten as the code before wrote them (whole ids, a record of the
//! terms' key names, a member in `root:all`, `<root>|<session>|<run>`) is still found by the
//! sessions search and the inbox, resumes to its end when answered, and leaves no entry of the
//! old form behind.

use baton_activities::io::RunOutcome;
use baton_client::{Client as _, wire::search::SessionSearch};
use baton_core::{AgentRegistry, message::ToolOutcome, store::Status, store::index_short_id};
use baton_tests::{Harness, agents, redis_url};
use redis::AsyncCommands;
use std::time::Duration;

const AGENT: &str = "upgraded_asker";

/// Rewrites `session`'s index entries and deadline member in the form written before the
/// short ids; answers how many entries it rewrote.
async fn write_old_form(harness: &Harness, session: &str, run: &str) -> usize {
    let client = redis::Client::open(redis_url()).unwrap();
    let mut redis = client.get_multiplexed_async_connection().await.unwrap();
    let short = index_short_id(session);
    let mut rewritten = 0;
    for key in harness.keys().await {
        if key.ends_with(":deadlineIndex") {
            let score: Option<f64> = redis
                .zscore(&key, format!("{short}|{}", index_short_id(run)))
                .await
                .unwrap();
            let score = score.expect("the far deadline is indexed");
            let () = redis::pipe()
                .zrem(&key, format!("{short}|{}", index_short_id(run)))
                .zadd(&key, format!("{session}|{session}|{run}"), score)
                .query_async(&mut redis)
                .await
                .unwrap();
            rewritten += 1;
            continue;
        }
        let Some((shard, name)) = key.split_once("}:") else {
            continue;
        };
        if !key.contains(":index:{idx-") || !name.starts_with("root:") {
            continue;
        }
        let Some(score): Option<f64> = redis.zscore(&key, &short).await.unwrap() else {
            continue;
        };
        let records = format!("{shard}}}:records");
        let all = format!("{shard}}}:root:all");
        let () = redis::pipe()
            .zrem(&key, &short)
            .zadd(&key, session, score)
            .zadd(&all, session, score)
            .query_async(&mut redis)
            .await
            .unwrap();
        let record: Option<String> = redis.hget(&records, &short).await.unwrap();
        if let Some(record) = record {
            let fields: Vec<serde_json::Value> = serde_json::from_str(&record).unwrap();
            // The codes' terms, as the old record named them by their keys.
            let mut terms: Vec<String> = Vec::new();
            for other in harness.keys().await {
                if other.starts_with(&format!("{shard}}}:root:")) {
                    let held: Option<f64> = redis.zscore(&other, session).await.unwrap();
                    let held_short: Option<f64> = redis.zscore(&other, &short).await.unwrap();
                    if held.is_some() || held_short.is_some() {
                        terms.push(other.split_once("}:").unwrap().1.to_owned());
                    }
                }
            }
            let old = serde_json::json!({"v": [fields[0], fields[1]], "k": terms});
            let () = redis::pipe()
                .hdel(&records, &short)
                .hset(&records, session, old.to_string())
                .query_async(&mut redis)
                .await
                .unwrap();
        }
        rewritten += 1;
    }
    rewritten
}

/// The index keys holding a member or field in the whole-id form.
async fn old_form_left(harness: &Harness, session: &str) -> Vec<String> {
    let client = redis::Client::open(redis_url()).unwrap();
    let mut redis = client.get_multiplexed_async_connection().await.unwrap();
    let mut left = Vec::new();
    for key in harness.keys().await {
        if !key.contains(":index:{idx-") && !key.ends_with(":deadlineIndex") {
            continue;
        }
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut redis)
            .await
            .unwrap();
        let members: Vec<String> = match kind.as_str() {
            "zset" => redis.zrange(&key, 0, -1).await.unwrap(),
            "hash" => redis.hkeys(&key).await.unwrap(),
            _ => Vec::new(),
        };
        if members.iter().any(|member| member.contains(session)) {
            left.push(key);
        }
    }
    left
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_suspended_before_the_short_index_form_is_found_and_resumes() {
    let registry =
        AgentRegistry::new([agents::asker_deadline(AGENT, Duration::from_secs(3600))]).unwrap();
    let harness = Harness::start(registry).await;
    let started = harness.suspended_run(AGENT).await;
    let session = started.session_id.clone();
    harness.index_settled().await;
    let rewritten = write_old_form(&harness, &session, &started.run_id).await;
    assert!(rewritten >= 4, "{rewritten}");
    assert!(!old_form_left(&harness, &session).await.is_empty());

    let search = SessionSearch {
        status: Some(Status::SuspendedClientTool),
        agent: Some(AGENT.to_owned()),
        ..SessionSearch::default()
    };
    let found = harness.client.sessions(&search).await.unwrap();
    assert_eq!(found.sessions.len(), 1);
    assert_eq!(found.sessions[0].session_id, session);
    let everything = harness
        .client
        .sessions(&SessionSearch::default())
        .await
        .unwrap();
    assert_eq!(everything.sessions.len(), 1);
    let inbox = harness
        .client
        .pending(&SessionSearch {
            agent: Some(AGENT.to_owned()),
            ..SessionSearch::default()
        })
        .await
        .unwrap();
    assert_eq!(inbox.calls.len(), 1);
    assert_eq!(inbox.calls[0].session_id, session);

    // Answered and resumed through the real path, to its end.
    let answer = ToolOutcome::Result(serde_json::json!({"answer": "yes"}));
    let outcome = harness
        .answer_and_finish(&session, &inbox.calls[0].tool_call_id, &answer)
        .await;
    assert_eq!(outcome, RunOutcome::Completed { steps: 1 });
    harness.index_settled().await;
    assert_eq!(harness.store.indexed_deadlines().await.unwrap(), 0);
    assert_eq!(
        old_form_left(&harness, &session).await,
        Vec::<String>::new()
    );
    let completed = harness
        .client
        .sessions(&SessionSearch {
            status: Some(Status::Completed),
            ..SessionSearch::default()
        })
        .await
        .unwrap();
    assert_eq!(completed.sessions.len(), 1);
}

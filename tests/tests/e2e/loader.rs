//! The `million` benchmark's loader (`baton_tests::loader`) writes what a real suspension
//! leaves: a loaded session and one a real first run suspended have the same keys, the same
//! fields and the same values (ids and times aside), the same deadline index entry, the same
//! search index entries (its terms' sets and its record), and the loaded one resumes and
//! completes through the real path.

use baton_client::Client as _;
use baton_core::{AgentRegistry, ChunkKind, message::ToolOutcome, store::index_short_id};
use baton_tests::{Harness, agents, loader, redis_url};
use redis::AsyncCommands;
use std::{collections::BTreeMap, time::Duration};

const AGENT: &str = "loaded_asker";

/// `text` with the session's ids named by role and every run of five or more digits (times in
/// ms, stream entry ids, stream attempts, the random number of a stored chunk header) as `#`.
fn normalized(text: &str, ids: &[(&str, &str)]) -> String {
    let mut text = text.to_owned();
    for (id, name) in ids {
        text = text.replace(id, name);
    }
    let mut out = String::with_capacity(text.len());
    let mut digits = String::new();
    for c in text.chars().chain(std::iter::once('\0')) {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if digits.len() >= 5 {
            out.push('#');
        } else {
            out.push_str(&digits);
        }
        digits.clear();
        if c != '\0' {
            out.push(c);
        }
    }
    out
}

/// Every key of one session and what it holds, normalized; and its deadline index members.
/// The indexes name ids in their short form too.
async fn contents(harness: &Harness, ids: &[(&str, &str)]) -> BTreeMap<String, Vec<String>> {
    let client = redis::Client::open(redis_url()).unwrap();
    let mut redis = client.get_multiplexed_async_connection().await.unwrap();
    let session = ids[0].0;
    let short_ids: Vec<(String, String)> = ids
        .iter()
        .map(|(id, name)| (index_short_id(id), format!("{name}~")))
        .collect();
    let short = short_ids[0].0.clone();
    let mut ids: Vec<(&str, &str)> = ids.to_vec();
    ids.extend(
        short_ids
            .iter()
            .map(|(id, name)| (id.as_str(), name.as_str())),
    );
    let ids = ids.as_slice();
    let mut all = BTreeMap::new();
    for key in harness.keys().await {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut redis)
            .await
            .unwrap();
        let values: Vec<String> = match kind.as_str() {
            "hash" => {
                let fields: BTreeMap<String, String> = redis.hgetall(&key).await.unwrap();
                // The search index's records hash: this session's record only.
                fields
                    .into_iter()
                    .filter(|(f, _)| key.contains(session) || f == session || *f == short)
                    .map(|(f, v)| format!("{f}={v}"))
                    .collect()
            }
            "list" => redis.lrange(&key, 0, -1).await.unwrap(),
            "zset" => {
                let members: Vec<(String, f64)> =
                    redis.zrange_withscores(&key, 0, -1).await.unwrap();
                members
                    .into_iter()
                    .filter(|(m, _)| m.contains(session) || m.contains(&short))
                    .map(|(m, s)| format!("{m} {s}"))
                    .collect()
            }
            "stream" => {
                let entries: redis::streams::StreamRangeReply =
                    redis.xrange_all(&key).await.unwrap();
                entries
                    .ids
                    .into_iter()
                    .map(|entry| {
                        let fields: BTreeMap<String, String> = entry
                            .map
                            .iter()
                            .map(|(f, v)| (f.clone(), redis::from_redis_value(v).unwrap()))
                            .collect();
                        format!("{} {fields:?}", entry.id)
                    })
                    .collect()
            }
            "string" => vec![redis.get(&key).await.unwrap()],
            "set" => {
                let mut members: Vec<String> = redis.smembers(&key).await.unwrap();
                members.sort();
                members
            }
            other => vec![format!("a {other}")],
        };
        if !key.contains(session) && values.is_empty() {
            continue;
        }
        if !key.contains(session) && kind != "zset" && !key.contains(":index:") {
            continue;
        }
        // The search index's shard is the session id's: the shard's number is an id too.
        let key = normalized(&key, ids).replace(&harness.prefix, "P");
        let key = match key.split_once(":index:{idx-") {
            Some((before, after)) => match after.split_once('}') {
                Some((_, rest)) => format!("{before}:index:{{idx-N}}{rest}"),
                None => key,
            },
            None => key,
        };
        let values = values.iter().map(|v| normalized(v, ids)).collect();
        all.insert(key, values);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_session_is_what_a_real_suspension_leaves_and_resumes_like_one() {
    let registry =
        AgentRegistry::new([agents::asker_deadline(AGENT, Duration::from_secs(3600))]).unwrap();
    let agent = registry.get(AGENT).unwrap().clone();
    let harness = Harness::start(registry).await;
    let real = harness.suspended_run(AGENT).await;
    let loaded = loader::load_suspended(
        &harness.store,
        &agent,
        "go",
        Some(baton_activities::DEFAULT_DEADLINE_HORIZON),
        baton_worker::state::DEFAULT_STREAM_MAX_CHUNKS,
    )
    .await
    .unwrap();

    let real_ids = [
        (real.session_id.as_str(), "S"),
        (real.run_id.as_str(), "R"),
        (real.stream_id.as_str(), "T"),
    ];
    let loaded_ids = [
        (loaded.session_id.as_str(), "S"),
        (loaded.run_id.as_str(), "R"),
        (loaded.stream_id.as_str(), "T"),
    ];
    harness.index_settled().await;
    let real_keys = contents(&harness, &real_ids).await;
    let loaded_keys = contents(&harness, &loaded_ids).await;
    assert!(
        real_keys.keys().any(|k| k.ends_with("deadlineIndex")),
        "the real suspension indexed its far deadline: {real_keys:#?}"
    );
    assert!(
        real_keys.keys().any(|k| k.ends_with(":records"))
            && real_keys
                .keys()
                .any(|k| k.ends_with("root:status:suspended_client_tool")),
        "the real suspension's search index entries are compared: {real_keys:#?}"
    );
    assert!(real_keys.len() >= 5, "{real_keys:#?}");
    assert_eq!(
        loaded_keys.keys().collect::<Vec<_>>(),
        real_keys.keys().collect::<Vec<_>>()
    );
    for (key, values) in &real_keys {
        assert_eq!(&loaded_keys[key], values, "{key}");
    }

    // The loaded session resumes through the real path and completes with the answer.
    let session = &loaded.session_id;
    let last = harness.client.status(session).await.unwrap().last_sequence;
    let answer = ToolOutcome::Result(serde_json::json!({"answer": "yes"}));
    harness
        .client
        .submit(session, "call_1_1", &answer)
        .await
        .unwrap();
    harness.client.resume(session).await.unwrap();
    let chunks = harness.chunks_after_until_end(session, last).await;
    let texts: String = chunks
        .iter()
        .filter_map(|c| match &c.kind {
            ChunkKind::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, r#"Outcome: {"answer":"yes"}"#);
    assert!(matches!(
        chunks.last().map(|c| &c.kind),
        Some(ChunkKind::End { .. })
    ));
}

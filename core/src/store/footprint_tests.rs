//! Store tests of a suspended session's footprint (issue 11) against a real Redis: chunk headers
//! stored once and put back on read, the stream written back at its size when the session goes
//! quiet, no key the state derives, and a submit that takes its rate-limit token in the script
//! that stores the answer.

use super::keys::{CHUNK_FIELD, CHUNK_HEADER_FIELD};
use super::tests::{at, new_session, store, turn};
use super::*;
use crate::{
    chunk::{ChunkHeader, ChunkKind, StreamChunk},
    message::{Message, ToolCall, ToolOutcome},
};
use redis::AsyncCommands;
use serde_json::json;
use std::collections::HashMap;

pub(super) fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: json!({"question": "?"}),
        provider_id: None,
    }
}

/// A pending client call of `ask`, its times fixed so that a call read back compares equal.
pub(super) fn pending(id: &str, step: u32) -> PendingCall {
    const AWAITED_SINCE: u64 = 1_800_000_000_000;
    PendingCall {
        tool_call_id: id.into(),
        tool_name: "ask".into(),
        input: json!({"question": "?"}),
        kind: PendingKind::Client,
        step,
        deadline_at: 4_000_000_000_000,
        completed_retention_ms: 60_000,
        approval_id: None,
        awaited_since: AWAITED_SINCE,
        asked: None,
    }
}

/// Suspends run `run_id` of `address` at `step` on one client call `id`.
pub(super) async fn suspend_on(
    store: &Store,
    address: &SessionAddress,
    run_id: &str,
    step: u32,
    id: &str,
) {
    let at = at(address, run_id, step);
    store
        .stage_turn(at, &mut turn(run_id, step, "asking", vec![call(id, "ask")]))
        .await
        .unwrap();
    store
        .commit_suspended_step(at, &[pending(id, step)])
        .await
        .unwrap();
}

/// The raw entries of a stream: (entry id, fields).
async fn raw_entries(store: &Store, key: &str) -> Vec<(String, HashMap<String, String>)> {
    let reply: redis::streams::StreamRangeReply = store.conn().xrange_all(key).await.unwrap();
    reply
        .ids
        .iter()
        .map(|entry| {
            let fields = entry
                .map
                .iter()
                .map(|(name, value)| {
                    let text: String = redis::from_redis_value(value).unwrap();
                    (name.clone(), text)
                })
                .collect();
            (entry.id.clone(), fields)
        })
        .collect()
}

/// The state hash's chunk headers, by field.
pub(super) async fn chunk_headers(
    store: &Store,
    address: &SessionAddress,
) -> HashMap<String, String> {
    let state: HashMap<String, String> = store
        .conn()
        .hgetall(store.key(address, Key::State))
        .await
        .unwrap();
    state
        .into_iter()
        .filter(|(field, _)| field.starts_with("chunkHeader:"))
        .collect()
}

/// Starts child `s1.child` (run `rc1` on stream `stc`) from step 1 of the root's run r1.
pub(super) async fn start_child(store: &Store, root: &SessionAddress) -> SessionAddress {
    let child = SessionAddress {
        root_session_id: root.root_session_id.clone(),
        session_id: "s1.child".into(),
    };
    let child_run = store
        .start_child(tree::NewChild {
            parent: at(root, "r1", 1),
            tool_call_id: "sub1",
            child: &child,
            agent_type: "helper",
            run_id: "rc1",
            stream_id: "stc",
            workflow_id: "wfc",
            messages: &[Message::user("help")],
            custom_state: None,
        })
        .await
        .unwrap();
    assert!(child_run.created);
    child
}

/// Step 1 of the child's run rc1.
pub(super) fn child_step(child: &SessionAddress) -> StepRef<'_> {
    StepRef {
        address: child,
        stream_id: "stc",
        run_id: "rc1",
        step: 1,
    }
}

/// Suspends step 1 of the child's run rc1 on one client call `id`.
pub(super) async fn suspend_child_on(store: &Store, child: &SessionAddress, id: &str) {
    let step = child_step(child);
    store
        .stage_turn(step, &mut turn("rc1", 1, "asking", vec![call(id, "ask")]))
        .await
        .unwrap();
    store
        .commit_suspended_step(step, &[pending(id, 1)])
        .await
        .unwrap();
}

fn header_of(chunk: &StreamChunk) -> (&str, &str, &str, &str) {
    let ChunkHeader {
        stream_id,
        session_id,
        agent_id,
        run_id,
        ..
    } = &chunk.header;
    (stream_id, session_id, agent_id, run_id)
}

#[tokio::test]
async fn chunk_headers_are_stored_once_per_run_and_put_back_on_read() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    new_session(&store, &root).await;
    store
        .emit_model_chunks(
            at(&root, "r1", 1),
            1,
            0,
            &[ChunkKind::StepStart { step: 1 }],
        )
        .await
        .unwrap();
    let child = start_child(&store, &root).await;
    let child_step = child_step(&child);
    store
        .emit_model_chunks(
            child_step,
            1,
            0,
            &[
                ChunkKind::StepStart { step: 1 },
                ChunkKind::TextDelta {
                    step: 1,
                    delta: "say \"hi\"".into(),
                },
            ],
        )
        .await
        .unwrap();

    // Each entry holds its chunk after the header and names the header, kept once per run (and
    // per session, on the root's stream) in the state hash of the stream's session.
    let root_entries = raw_entries(&store, &store.key(&root, Key::Stream)).await;
    for (id, fields) in &root_entries {
        assert!(fields[CHUNK_FIELD].starts_with("\"timestamp\":"), "{id}");
        assert!(!fields[CHUNK_FIELD].contains("runId"), "{id}");
        let header_key: u32 = fields[CHUNK_HEADER_FIELD].parse().unwrap();
        assert!(header_key < 1 << 23, "{id}");
    }
    let root_headers = chunk_headers(&store, &root).await;
    assert_eq!(
        root_headers.len(),
        2,
        "the root's run and the child's: {root_headers:?}"
    );
    assert_eq!(chunk_headers(&store, &child).await.len(), 1);

    // Read back, the chunks are the ones written: the root's stream carries the child's chunks
    // with the child's session and agent ids and the root's stream id (a chunk names the stream
    // it is on, so a reader that re-snapshots on a new stream id does not on every copy).
    let read = |store: Store, address: SessionAddress| async move {
        store.chunks_after(&address, 0, 100).await.unwrap()
    };
    let from_root = read(store.clone(), root.clone()).await;
    let headers: Vec<_> = from_root.iter().map(header_of).collect();
    assert_eq!(
        headers,
        [
            ("st1", "s1", "s1", "r1"),
            ("st1", "s1", "s1", "r1"),
            ("st1", "s1", "s1", "r1"),
            ("st1", "s1.child", "s1.child", "rc1"),
            ("st1", "s1.child", "s1.child", "rc1"),
            ("st1", "s1.child", "s1.child", "rc1"),
        ]
    );
    assert_eq!(
        from_root.iter().map(|c| c.sequence).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5, 6]
    );
    assert_eq!(
        from_root.iter().map(|c| c.kind.name()).collect::<Vec<_>>(),
        [
            "run_start",
            "step_start",
            // The parent announces the child before anything of it.
            "subagent_start",
            "run_start",
            "step_start",
            "text_delta"
        ]
    );
    assert!(matches!(
        &from_root[5].kind,
        ChunkKind::TextDelta { delta, .. } if delta == "say \"hi\""
    ));
    let from_child = read(store.clone(), child.clone()).await;
    assert_eq!(
        from_child.iter().map(|c| c.sequence).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(
        from_child
            .iter()
            .all(|c| header_of(c) == ("stc", "s1.child", "s1.child", "rc1"))
    );
    // The chunks the root's stream copies are the child's but the sequence and the stream id.
    let copies = [&from_root[3], &from_root[4], &from_root[5]];
    for (copy, own) in copies.into_iter().zip(&from_child) {
        let mut header = own.header.clone();
        header.stream_id = "st1".into();
        assert_eq!((&copy.header, &copy.kind), (&header, &own.kind));
    }
    // Every header is still kept in the short form: the copies' as the child's suffix and key.
    assert!(
        root_headers
            .values()
            .all(|stored| stored == "r1" || stored.starts_with("^.child:")),
        "{root_headers:?}"
    );

    // A server that has not read these headers yet (another process) reads the same chunks, and
    // a blocking follower does too.
    let other = Store::connect(
        &std::env::var("BATON_TEST_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned()),
        store.prefix.to_string(),
    )
    .await
    .unwrap();
    assert_eq!(read(other.clone(), root.clone()).await, from_root);
    let mut subscriber = other.subscriber().await.unwrap();
    let followed = subscriber.next_chunks(&other, &root, 3, 100).await.unwrap();
    assert_eq!(followed, from_root[3..]);
}

#[tokio::test]
async fn a_chunk_written_before_headers_were_stored_once_is_read_as_it_is() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    new_session(&store, &root).await;
    // An entry as earlier versions wrote it: the whole chunk in c, no h.
    let whole = r#"{"sequence":2,"streamId":"st1","sessionId":"s1","agentId":"s1","runId":"r0","timestamp":5,"type":"step_start","step":1}"#;
    let () = store
        .conn()
        .xadd(
            store.key(&root, Key::Stream),
            "2-0",
            &[(CHUNK_FIELD, whole)],
        )
        .await
        .unwrap();
    let chunks = store.chunks_after(&root, 1, 10).await.unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(serde_json::to_string(&chunks[0]).unwrap(), whole);
}

#[tokio::test]
async fn a_copy_stored_as_earlier_versions_did_is_read_with_the_childs_stream_id() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    new_session(&store, &root).await;
    let child = start_child(&store, &root).await;
    let child_key = chunk_headers(&store, &child)
        .await
        .into_keys()
        .next()
        .unwrap();
    let child_key = child_key.trim_start_matches("chunkHeader:").to_owned();
    // A copy as earlier versions stored its header: `.<suffix>:<key>`, naming the child's stream.
    let () = store
        .conn()
        .hset(
            store.key(&root, Key::State),
            "chunkHeader:77",
            format!(".child:{child_key}"),
        )
        .await
        .unwrap();
    let () = store
        .conn()
        .xadd(
            store.key(&root, Key::Stream),
            "90-0",
            &[
                (
                    CHUNK_FIELD,
                    r#""timestamp":5,"type":"step_start","step":1}"#,
                ),
                (CHUNK_HEADER_FIELD, "77"),
            ],
        )
        .await
        .unwrap();
    let chunks = store.chunks_after(&root, 89, 10).await.unwrap();
    assert_eq!(chunks.len(), 1);
    assert_eq!(
        header_of(&chunks[0]),
        ("stc", "s1.child", "s1.child", "rc1")
    );
}

#[tokio::test]
async fn a_suspended_session_keeps_no_key_its_state_derives_and_a_stream_at_its_size() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    new_session(&store, &root).await;
    suspend_on(&store, &root, "r1", 1, "c1").await;

    // The run awaiting the calls is the session's; the root owns the calls it has pending.
    let exists = |key: Key| {
        let (store, root) = (store.clone(), root.clone());
        async move {
            let exists: bool = store.conn().exists(store.key(&root, key)).await.unwrap();
            exists
        }
    };
    assert!(!exists(Key::PendingRun).await);
    assert!(!exists(Key::Ownership).await);
    assert_eq!(
        store.pending_calls_with_run(&root).await.unwrap(),
        Some(("r1".to_owned(), vec![pending("c1", 1)]))
    );
    assert_eq!(
        store.call_owner("s1", "c1").await.unwrap().as_deref(),
        Some("s1")
    );
    assert_eq!(store.call_owner("s1", "other").await.unwrap(), None);

    // The stream was written back at its size when the run suspended: Redis's 4 KB room for a
    // new node is gone.
    let used: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(store.key(&root, Key::Stream))
        .query_async(&mut store.conn())
        .await
        .unwrap();
    assert!(used < 2048, "{used} bytes");
    let chunks = store.chunks_after(&root, 0, 100).await.unwrap();
    assert_eq!(
        chunks.iter().map(|c| c.kind.name()).collect::<Vec<_>>(),
        ["run_start", "tool_start", "step_end", "suspended"]
    );
}

fn answer(text: &str) -> StoredAnswer {
    StoredAnswer {
        answer: Answer::Outcome {
            outcome: ToolOutcome::Result(json!({"answer": text})),
        },
        submitted_at: now_ms(),
    }
}

fn attempt<'a>(id: &'a str, answer: &'a StoredAnswer, per_minute: u32) -> SubmitAttempt<'a> {
    SubmitAttempt {
        root_session_id: "s1",
        tool_call_id: id,
        approval_id: None,
        answer,
        submits_per_minute: Some(per_minute),
        refused_by_schema: &[],
    }
}

#[tokio::test]
async fn a_rate_limited_submit_writes_nothing_and_leaves_the_bucket_as_it_was() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    new_session(&store, &root).await;
    let at = at(&root, "r1", 1);
    store
        .stage_turn(
            at,
            &mut turn("r1", 1, "", vec![call("c1", "ask"), call("c2", "ask")]),
        )
        .await
        .unwrap();
    store
        .commit_suspended_step(at, &[pending("c1", 1), pending("c2", 1)])
        .await
        .unwrap();
    let bucket_key = store.key(&root, Key::SubmitBucket);
    let bucket = || {
        let (store, key) = (store.clone(), bucket_key.clone());
        async move {
            let fields: HashMap<String, String> = store.conn().hgetall(&key).await.unwrap();
            fields
        }
    };

    // One a minute: the first submit takes the token with its answer.
    let first_answer = answer("one");
    let first = store
        .submit_answer(&attempt("c1", &first_answer, 1))
        .await
        .unwrap();
    assert_eq!(
        first.outcome,
        SubmitOutcome::Accepted(Continuation::AwaitingBatch)
    );
    assert_eq!(
        (first.tool_name.as_str(), first.run_id.as_str()),
        ("ask", "r1")
    );
    let after_first = bucket().await;
    assert_eq!(after_first["tokens"].parse::<f64>().unwrap(), 0.0);
    let state_before = store.session(&root).await.unwrap();
    let open_before: Vec<String> = store
        .conn()
        .zrange(store.key(&root, Key::OpenDeadlines), 0, -1)
        .await
        .unwrap();

    // The next one finds the bucket empty: nothing is written, the bucket included.
    let second_answer = answer("two");
    let refused = store
        .submit_answer(&attempt("c2", &second_answer, 1))
        .await
        .unwrap();
    let SubmitOutcome::RateLimited(wait) = refused.outcome else {
        panic!("not rate limited: {refused:?}");
    };
    assert!(wait.as_millis() > 0 && wait.as_secs() <= 60, "{wait:?}");
    assert_eq!(bucket().await, after_first);
    assert_eq!(
        store
            .answers(&root)
            .await
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["c1"]
    );
    assert_eq!(store.session(&root).await.unwrap(), state_before);
    let open_after: Vec<String> = store
        .conn()
        .zrange(store.key(&root, Key::OpenDeadlines), 0, -1)
        .await
        .unwrap();
    assert_eq!(open_after, open_before);

    // Without a limit the same answer is stored.
    let unlimited = SubmitAttempt {
        submits_per_minute: None,
        ..attempt("c2", &second_answer, 1)
    };
    let stored = store.submit_answer(&unlimited).await.unwrap();
    assert_eq!(
        stored.outcome,
        SubmitOutcome::Accepted(Continuation::CallerResumes)
    );
}

#[tokio::test]
async fn a_submit_to_a_childs_call_is_answered_on_the_child_and_takes_one_token_of_the_root() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    new_session(&store, &root).await;
    let child = start_child(&store, &root).await;
    let child_step = child_step(&child);
    store
        .stage_turn(
            child_step,
            &mut turn("rc1", 1, "", vec![call("cc1", "ask")]),
        )
        .await
        .unwrap();
    store
        .commit_suspended_step(child_step, &[pending("cc1", 1)])
        .await
        .unwrap();
    // The child's call has its owner on the root; the root's bucket is the tree's.
    assert_eq!(
        store.call_owner("s1", "cc1").await.unwrap().as_deref(),
        Some("s1.child")
    );

    let yes = answer("yes");
    let submitted = store
        .submit_answer(&attempt("cc1", &yes, 10))
        .await
        .unwrap();
    assert_eq!(
        submitted,
        Submitted {
            outcome: SubmitOutcome::Accepted(Continuation::CallerResumes),
            owner_session_id: "s1.child".into(),
            tool_name: "ask".into(),
            run_id: "rc1".into(),
        }
    );
    assert_eq!(store.answers(&child).await.unwrap().len(), 1);
    let tokens: String = store
        .conn()
        .hget(store.key(&root, Key::SubmitBucket), "tokens")
        .await
        .unwrap();
    assert_eq!(tokens.parse::<f64>().unwrap().round(), 9.0);
    assert_eq!(
        store.key(&child, Key::SubmitBucket),
        store.key(&root, Key::SubmitBucket)
    );
}

/// The stream's node count (XINFO's `radix-tree-keys`) and its memory.
async fn stream_nodes_and_bytes(store: &Store, key: &str) -> (u64, u64) {
    let info: HashMap<String, redis::Value> = redis::cmd("XINFO")
        .arg("STREAM")
        .arg(key)
        .query_async(&mut store.conn())
        .await
        .unwrap();
    let nodes: u64 = redis::from_redis_value(&info["radix-tree-keys"]).unwrap();
    (nodes, memory_usage(store, key).await)
}

async fn memory_usage(store: &Store, key: &str) -> u64 {
    redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .arg("SAMPLES")
        .arg(0)
        .query_async(&mut store.conn())
        .await
        .unwrap()
}

/// What the stream takes written back from its own dump: every node at its size (the copy's
/// name as long as the stream's, which MEMORY USAGE counts).
async fn bytes_at_its_size(store: &Store, key: &str) -> u64 {
    let copy = format!("{}#", &key[..key.len() - 1]);
    let dump: Vec<u8> = redis::cmd("DUMP")
        .arg(key)
        .query_async(&mut store.conn())
        .await
        .unwrap();
    let () = redis::cmd("RESTORE")
        .arg(&copy)
        .arg(0)
        .arg(dump)
        .arg("REPLACE")
        .query_async(&mut store.conn())
        .await
        .unwrap();
    let bytes = memory_usage(store, &copy).await;
    let () = store.conn().del(&copy).await.unwrap();
    bytes
}

#[tokio::test]
async fn a_long_stream_is_written_back_when_it_grew_a_node_and_only_then() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    new_session(&store, &root).await;
    let stream = store.key(&root, Key::Stream);
    let state = store.key(&root, Key::State);
    let at = at(&root, "r1", 1);
    // Chunk i of the step is written when i were before it.
    let mut index = 0;
    // Writes `count` text deltas, then a `suspended` chunk: the session goes quiet.
    let mut quiet_after = async |count: usize| {
        let mut kinds: Vec<ChunkKind> = (0..count)
            .map(|i| ChunkKind::TextDelta {
                step: 1,
                delta: format!("part {i}"),
            })
            .collect();
        kinds.push(ChunkKind::Suspended {
            step: 1,
            tool_call_ids: vec!["c1".into()],
        });
        let written = store.emit_model_chunks(at, 1, index, &kinds).await.unwrap();
        assert_eq!(written as usize, kinds.len());
        index += written;
    };
    let shape = || async {
        let shape: Option<String> = store.conn().hget(&state, "streamShape").await.unwrap();
        shape
    };

    quiet_after(150).await;
    let (nodes, bytes) = stream_nodes_and_bytes(&store, &stream).await;
    assert!(nodes > 1, "{nodes} nodes");
    assert_eq!(bytes, bytes_at_its_size(&store, &stream).await);
    let first = shape()
        .await
        .expect("a stream of more nodes keeps its shape");

    // A few chunks more fit in the newest node, which grows by them: nothing to give back,
    // and the stream is not copied again.
    quiet_after(2).await;
    let (same_nodes, bytes) = stream_nodes_and_bytes(&store, &stream).await;
    assert_eq!(same_nodes, nodes);
    assert_eq!(shape().await.as_deref(), Some(first.as_str()));
    assert_eq!(bytes, bytes_at_its_size(&store, &stream).await);

    // Enough for a new node, with Redis's room: given back when the session goes quiet again.
    quiet_after(100).await;
    let (more_nodes, bytes) = stream_nodes_and_bytes(&store, &stream).await;
    assert!(more_nodes > nodes, "{more_nodes} nodes");
    assert_ne!(shape().await.as_deref(), Some(first.as_str()));
    assert_eq!(bytes, bytes_at_its_size(&store, &stream).await);
}

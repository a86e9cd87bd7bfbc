//! Store tests of the state hash's compact form (issue 11) against a real Redis, with ids as the
//! server mints them: a suspended session's state stays within Redis's compact encoding
//! (`listpack`), chunks read back byte for byte from headers stored as their run id (or a
//! descendant's suffix on the root), the suspension's run and a resumed run's workflow id are
//! rebuilt on read, and what earlier versions stored still reads back.

use super::footprint_tests::{call, chunk_headers, pending};
use super::keys::{CHUNK_FIELD, CHUNK_HEADER_FIELD};
use super::tests::{store, turn};
use super::*;
use crate::{
    chunk::{ChunkKind, StreamChunk},
    ids,
    message::Message,
};
use redis::AsyncCommands;

/// A root session with minted ids: its address, stream id and first run id.
async fn minted_session(store: &Store) -> (SessionAddress, String, String) {
    let address = SessionAddress::root(ids::new_session_id());
    let (stream_id, run_id) = (ids::new_run_id(), ids::new_run_id());
    store
        .create_session(NewSession {
            address: &address,
            agent_type: "asker",
            run_id: &run_id,
            stream_id: &stream_id,
            workflow_id: &ids::first_run_workflow_id("asker", &address.session_id),
            messages: &[Message::user("hi")],
            max_chunks: 0,
        })
        .await
        .unwrap();
    (address, stream_id, run_id)
}

async fn encoding(store: &Store, key: &str) -> String {
    redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg(key)
        .query_async(&mut store.conn())
        .await
        .unwrap()
}

/// Each chunk read back is the JSON written: its text, decoded and encoded again, is the same.
async fn assert_read_back_byte_for_byte(
    store: &Store,
    address: &SessionAddress,
) -> Vec<StreamChunk> {
    let texts = store.chunk_texts_after(address, 0, 100).await.unwrap();
    let chunks = store.chunks_after(address, 0, 100).await.unwrap();
    assert_eq!(texts.len(), chunks.len());
    for ((sequence, text), chunk) in texts.iter().zip(&chunks) {
        assert_eq!(*sequence, chunk.sequence);
        assert_eq!(&serde_json::to_string(chunk).unwrap(), text);
    }
    chunks
}

#[tokio::test]
async fn a_suspended_sessions_state_keeps_the_compact_encoding_and_its_chunks_read_back() {
    let store = store().await;
    let (root, stream_id, run_id) = minted_session(&store).await;
    let step = StepRef {
        address: &root,
        stream_id: &stream_id,
        run_id: &run_id,
        step: 1,
    };
    let call_id = "call_7a1f5c3e9b2d4f6a8c0e1b3d";
    store
        .stage_turn(
            step,
            &mut turn(&run_id, 1, "asking", vec![call(call_id, "ask")]),
        )
        .await
        .unwrap();
    store
        .commit_suspended_step(step, &[pending(call_id, 1)])
        .await
        .unwrap();

    let state_key = store.key(&root, Key::State);
    assert_eq!(encoding(&store, &state_key).await, "listpack");
    // The header is kept once, as the run id: the rest is the session's.
    let headers = chunk_headers(&store, &root).await;
    assert_eq!(headers.values().collect::<Vec<_>>(), [&run_id]);
    let chunks = assert_read_back_byte_for_byte(&store, &root).await;
    assert!(chunks.iter().all(|c| c.header.stream_id == stream_id
        && c.header.session_id == root.session_id
        && c.header.agent_id == root.session_id
        && c.header.run_id == run_id));
    let state = store.session(&root).await.unwrap().unwrap();
    let suspension = state.suspension.unwrap();
    assert_eq!(
        (suspension.run_id.as_str(), suspension.step),
        (run_id.as_str(), 1)
    );
    assert_eq!(
        state.workflow_id.as_deref(),
        Some(ids::first_run_workflow_id("asker", &root.session_id).as_str())
    );
    let stored_workflow_id = || {
        let (store, state_key) = (store.clone(), state_key.clone());
        async move {
            let stored: Option<String> = store.conn().hget(&state_key, "workflowId").await.unwrap();
            stored
        }
    };
    assert_eq!(stored_workflow_id().await, None);

    // A resume's claim keeps the suspended run aside and does not store the resumed run's
    // workflow id, which is derived; the state stays compact. A release gives the run back.
    let new_run = RunClaim {
        agent_type: "asker",
        stream_id: &stream_id,
        run_id: NewRunId::Minted,
    };
    let entry = ResumeEntry {
        message: Some(Message::user("go on")),
        abandon_pending: true,
        expected_run_id: None,
    };
    let claimed = store.claim_new_run(&root, new_run, &entry).await.unwrap();
    let Claim::Claimed(claimed) = claimed else {
        panic!("{claimed:?}");
    };
    assert_eq!(claimed.step_count, 1);
    let resumed_run_id = claimed.run_id;
    assert_eq!(
        claimed.workflow_id,
        ids::resume_workflow_id("asker", &root.session_id, &resumed_run_id)
    );
    assert_eq!(encoding(&store, &state_key).await, "listpack");
    assert_eq!(stored_workflow_id().await.as_deref(), Some(""));
    let state = store.session(&root).await.unwrap().unwrap();
    assert_eq!(state.suspension.unwrap().run_id, run_id);
    assert_eq!(
        state.workflow_id.as_deref(),
        Some(claimed.workflow_id.as_str()),
        "derived from the resumed run"
    );
    let resumed = RunRef {
        address: &root,
        stream_id: &stream_id,
        run_id: &resumed_run_id,
    };
    assert!(store.release_claim(resumed).await.unwrap());
    let state = store.session(&root).await.unwrap().unwrap();
    assert_eq!(state.run_id, run_id);
    assert_eq!(state.status, Status::SuspendedClientTool);
    assert_eq!(state.suspension.unwrap().run_id, run_id);
    let chunks = assert_read_back_byte_for_byte(&store, &root).await;
    let runs: Vec<&str> = chunks.iter().map(|c| c.header.run_id.as_str()).collect();
    assert_eq!(
        runs[runs.len() - 2..],
        [resumed_run_id.as_str(), run_id.as_str()]
    );
}

#[tokio::test]
async fn a_childs_chunks_on_the_roots_stream_name_the_child_and_read_back() {
    let store = store().await;
    let (root, stream_id, run_id) = minted_session(&store).await;
    let child = SessionAddress {
        root_session_id: root.session_id.clone(),
        session_id: format!("{}.{}", root.session_id, ids::new_run_id()),
    };
    let (child_stream_id, child_run_id) = (ids::new_run_id(), ids::new_run_id());
    // Another header holds, on the root, the key the header of the child's copies (on the root's
    // stream) takes first: the root's copy takes the next one.
    let copy_header = format!(
        r#""streamId":"{stream_id}","sessionId":"{0}","agentId":"{0}","runId":"{child_run_id}","#,
        child.session_id
    );
    let sha1: String = redis::cmd("EVAL")
        .arg("return redis.sha1hex(ARGV[1])")
        .arg(0)
        .arg(&copy_header)
        .query_async(&mut store.conn())
        .await
        .unwrap();
    let first_key = u32::from_str_radix(&sha1[..6], 16).unwrap() % (1 << 23);
    let () = store
        .conn()
        .hset(
            store.key(&root, Key::State),
            format!("chunkHeader:{first_key}"),
            "another-run",
        )
        .await
        .unwrap();
    store
        .start_child(tree::NewChild {
            parent: StepRef {
                address: &root,
                stream_id: &stream_id,
                run_id: &run_id,
                step: 1,
            },
            tool_call_id: "sub1",
            child: &child,
            agent_type: "helper",
            run_id: &child_run_id,
            stream_id: &child_stream_id,
            workflow_id: &ids::first_run_workflow_id("helper", &child.session_id),
            messages: &[Message::user("help")],
            custom_state: None,
        })
        .await
        .unwrap();
    let child_step = StepRef {
        address: &child,
        stream_id: &child_stream_id,
        run_id: &child_run_id,
        step: 1,
    };
    store
        .emit_model_chunks(child_step, 1, 0, &[ChunkKind::StepStart { step: 1 }])
        .await
        .unwrap();

    // The root keeps its run's header as the run id and the child's copies (on the root's
    // stream id) as `^`, the child's suffix and the key of the child's header; the child keeps
    // its own as its run id.
    let child_headers = chunk_headers(&store, &child).await;
    let child_key = child_headers
        .keys()
        .next()
        .unwrap()
        .replace("chunkHeader:", "");
    assert_eq!(
        child_headers.into_values().collect::<Vec<_>>(),
        [child_run_id.as_str()]
    );
    let suffix = &child.session_id[root.session_id.len()..];
    let root_fields = chunk_headers(&store, &root).await;
    assert_eq!(
        root_fields.get(&format!("chunkHeader:{}", first_key + 1)),
        Some(&format!("^{suffix}:{child_key}"))
    );
    let mut root_headers: Vec<String> = root_fields.into_values().collect();
    root_headers.sort();
    let mut expected = vec![
        format!("^{suffix}:{child_key}"),
        run_id.clone(),
        "another-run".to_owned(),
    ];
    expected.sort();
    assert_eq!(root_headers, expected);
    assert_eq!(
        encoding(&store, &store.key(&root, Key::State)).await,
        "listpack"
    );
    // The child's state too: its first run's workflow id (over 64 bytes) is derived, not stored.
    assert_eq!(
        encoding(&store, &store.key(&child, Key::State)).await,
        "listpack"
    );
    assert_eq!(
        store.session(&child).await.unwrap().unwrap().workflow_id,
        Some(ids::first_run_workflow_id("helper", &child.session_id))
    );

    let from_root = assert_read_back_byte_for_byte(&store, &root).await;
    let from_child = assert_read_back_byte_for_byte(&store, &child).await;
    let copies: Vec<_> = from_root
        .iter()
        .filter(|c| c.header.session_id == child.session_id)
        .collect();
    assert_eq!(copies.len(), from_child.len());
    for (copy, own) in copies.into_iter().zip(&from_child) {
        assert_eq!(copy.kind, own.kind);
        assert_eq!(own.header.stream_id, child_stream_id);
        assert_eq!(copy.header.stream_id, stream_id);
        assert_eq!(
            (
                &copy.header.session_id,
                &copy.header.agent_id,
                &copy.header.run_id
            ),
            (
                &own.header.session_id,
                &own.header.agent_id,
                &own.header.run_id
            )
        );
        assert_eq!(copy.header.agent_id, child.session_id);
    }
}

#[tokio::test]
async fn what_earlier_versions_stored_reads_back() {
    let store = store().await;
    let root = SessionAddress::root("s1");
    super::tests::new_session(&store, &root).await;
    let state_key = store.key(&root, Key::State);
    // A whole header under an 8-hex-digit key, a root's copy of a child's chunk named the same
    // way, and a suspension naming its run.
    let own = r#""streamId":"st1","sessionId":"s1","agentId":"s1","runId":"r0","#;
    let childs = r#""streamId":"stc","sessionId":"s1.child","agentId":"s1.child","runId":"rc0","#;
    let () = store
        .conn()
        .hset_multiple(
            &state_key,
            &[
                ("chunkHeader:0a1b2c3d", own),
                ("chunkHeader:4e5f6a7b", childs),
                (
                    "suspension",
                    r#"{"runId":"r0","step":1,"toolCallIds":["c1"]}"#,
                ),
            ],
        )
        .await
        .unwrap();
    let stream_key = store.key(&root, Key::Stream);
    for (id, header_key, rest) in [
        (
            "2-0",
            "0a1b2c3d",
            r#""timestamp":5,"type":"step_start","step":1}"#,
        ),
        (
            "3-0",
            "4e5f6a7b",
            r#""timestamp":6,"type":"step_start","step":1}"#,
        ),
    ] {
        let () = store
            .conn()
            .xadd(
                &stream_key,
                id,
                &[(CHUNK_FIELD, rest), (CHUNK_HEADER_FIELD, header_key)],
            )
            .await
            .unwrap();
    }
    let texts = store.chunk_texts_after(&root, 1, 10).await.unwrap();
    assert_eq!(
        texts,
        [
            (
                2,
                format!(r#"{{"sequence":2,{own}"timestamp":5,"type":"step_start","step":1}}"#)
            ),
            (
                3,
                format!(r#"{{"sequence":3,{childs}"timestamp":6,"type":"step_start","step":1}}"#)
            ),
        ]
    );
    assert_eq!(store.chunks_after(&root, 1, 10).await.unwrap().len(), 2);
    let suspension = store
        .session(&root)
        .await
        .unwrap()
        .unwrap()
        .suspension
        .unwrap();
    assert_eq!((suspension.run_id.as_str(), suspension.step), ("r0", 1));
}

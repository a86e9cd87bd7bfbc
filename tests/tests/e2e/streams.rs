//! Following a session's stream: resuming from the last sequence, many followers sharing one
//! Redis reader, and trimmed streams answering `TRUNCATED`.

use baton_client::Client as _;
use baton_core::{ErrorCode, StreamChunk, message::ToolOutcome};
use baton_tests::{Harness, WAIT_LIMIT, agents, open_options};
use futures::StreamExt;
use serde_json::json;

fn sequences(chunks: &[StreamChunk]) -> Vec<u64> {
    chunks.iter().map(|c| c.sequence).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_that_drops_resumes_from_its_last_sequence_with_nothing_lost_or_repeated() {
    let harness = Harness::start(agents::registry()).await;
    let started = harness.client.start("long", "go").await.unwrap();
    let session = started.session_id;

    let mut first = Vec::new();
    {
        let mut follow = std::pin::pin!(harness.client.follow(&session, 0));
        while first.len() < 7 {
            let next = tokio::time::timeout(WAIT_LIMIT, follow.next()).await;
            first.push(next.unwrap().unwrap().unwrap());
        }
    } // dropped: the connection closes mid-stream
    let last = first.last().unwrap().sequence;
    let rest = harness.chunks_after_until_end(&session, last).await;
    let mut joined = first;
    joined.extend(rest);

    let all = harness.chunks_until_end(&session, WAIT_LIMIT).await;
    assert_eq!(
        sequences(&joined),
        (1..=all.len() as u64).collect::<Vec<_>>()
    );
    assert_eq!(joined, all);
    assert!(all.len() > 40, "{} chunks", all.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_of_one_session_share_one_feed_and_each_get_every_chunk() {
    let harness = Harness::start(agents::registry()).await;
    let session = harness.suspended_session("asker_only").await;
    let suspended_at = harness.client.status(&session).await.unwrap().last_sequence;

    let followers: Vec<_> = (0..20)
        .map(|_| {
            let client = harness.client.clone();
            let session = session.clone();
            tokio::spawn(async move {
                let mut follow = std::pin::pin!(client.follow(&session, suspended_at));
                let mut chunks = Vec::new();
                while let Some(chunk) = follow.next().await {
                    let chunk = chunk.unwrap();
                    let end = matches!(chunk.kind, baton_core::ChunkKind::End { .. });
                    chunks.push(chunk);
                    if end {
                        break;
                    }
                }
                chunks
            })
        })
        .collect();
    // The followers wait on a suspended session: one feed serves them all.
    let waiting = async {
        while harness.state.streams.feed_count() == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, waiting).await.unwrap();
    assert_eq!(harness.state.streams.feed_count(), 1);

    let answer = ToolOutcome::Result(json!({"answer": "Ann"}));
    harness
        .answer_and_finish(&session, "call_1_1", &answer)
        .await;
    let expected = harness.chunks_after_until_end(&session, suspended_at).await;
    assert!(expected.len() >= 5);
    for follower in followers {
        let chunks = tokio::time::timeout(WAIT_LIMIT, follower)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(chunks, expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_the_stream_no_longer_holds_answers_truncated() {
    let options = baton_worker::ServerOptions {
        stream_max_chunks: 4,
        ..open_options()
    };
    let harness = Harness::start_with(agents::registry(), options).await;
    let started = harness.client.start("two_steps", "go").await.unwrap();
    harness.run_result(&started.workflow_id).await.unwrap();
    let last = harness
        .client
        .status(&started.session_id)
        .await
        .unwrap()
        .last_sequence;
    let floor = last - 4;
    let snapshot = harness.client.snapshot(&started.session_id).await.unwrap();
    assert_eq!(snapshot.oldest_retained_sequence, floor);

    let mut follow = std::pin::pin!(harness.client.follow(&started.session_id, 0));
    let refused = follow.next().await.unwrap().unwrap_err();
    let refused = baton_tests::api_error(refused);
    assert_eq!(refused.code, ErrorCode::Truncated);
    assert_eq!(refused.details["oldestRetainedSequence"], json!(floor));
    assert!(follow.next().await.is_none());

    // The floor is the lowest valid cursor: the oldest chunk the stream holds is the next one,
    // and a cursor just below the floor is refused with the same floor.
    let held = harness
        .store
        .chunks_after(
            &baton_core::store::SessionAddress::root(&started.session_id),
            0,
            1,
        )
        .await
        .unwrap();
    assert_eq!(held[0].sequence, floor + 1);
    let mut below = std::pin::pin!(harness.client.follow(&started.session_id, floor - 1));
    let refused = baton_tests::api_error(below.next().await.unwrap().unwrap_err());
    assert_eq!(refused.details["oldestRetainedSequence"], json!(floor));

    // From the floor, the kept chunks arrive, the last one the end.
    let kept = harness
        .chunks_after_until_end(&started.session_id, floor)
        .await;
    assert_eq!(sequences(&kept), (floor + 1..=last).collect::<Vec<_>>());
}

/// Every chunk of one SSE response, until the server closes it.
async fn whole_response(
    client: baton_client::HttpClient,
    session: String,
    from: u64,
) -> Vec<StreamChunk> {
    let stream = client.subscribe(&session, from).await.unwrap();
    let chunks = stream.map(|chunk| chunk.unwrap()).collect::<Vec<_>>();
    tokio::time::timeout(WAIT_LIMIT, chunks).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_during_a_later_turn_is_past_the_earlier_turns_end() {
    use baton_core::ChunkKind;
    use baton_tests::WorkerProcess;
    let harness = Harness::server_only(agents::registry()).await;
    let worker = WorkerProcess::spawn(env!("CARGO_BIN_EXE_baton-test-worker"), &harness, false);
    let session = harness
        .client
        .start("chatter", "hi")
        .await
        .unwrap()
        .session_id;
    let first_turn = harness.chunks_until_end(&session, WAIT_LIMIT).await;
    let first_end = first_turn.last().unwrap().sequence;
    // No worker: the second turn's run holds the session before it commits anything.
    drop(worker);
    harness
        .client
        .send_message(&session, "again", false)
        .await
        .unwrap();

    let snapshot = harness.client.snapshot(&session).await.unwrap();
    assert!(
        snapshot.stream_sequence >= first_end as i64,
        "the snapshot's position {} precedes the first turn's end {first_end}",
        snapshot.stream_sequence
    );
    // A follower attached from the snapshot, and one attached before the first turn's end,
    // both follow the second turn to its end.
    let from_snapshot = tokio::spawn(whole_response(
        harness.client.clone(),
        session.clone(),
        snapshot.stream_sequence as u64,
    ));
    let from_before = tokio::spawn(whole_response(
        harness.client.clone(),
        session.clone(),
        first_end - 1,
    ));
    let _worker = WorkerProcess::spawn(env!("CARGO_BIN_EXE_baton-test-worker"), &harness, false);
    let from_snapshot = from_snapshot.await.unwrap();
    let from_before = from_before.await.unwrap();

    let ends = |chunks: &[StreamChunk]| -> Vec<u64> {
        chunks
            .iter()
            .filter(|chunk| matches!(chunk.kind, ChunkKind::End { .. }))
            .map(|chunk| chunk.sequence)
            .collect()
    };
    let second_end = from_snapshot.last().unwrap();
    assert!(
        matches!(second_end.kind, ChunkKind::End { .. }),
        "{second_end:?}"
    );
    assert_eq!(ends(&from_snapshot), [second_end.sequence]);
    assert!(matches!(from_snapshot[0].kind, ChunkKind::RunStart { .. }));
    assert_eq!(ends(&from_before), [first_end, second_end.sequence]);
    assert_eq!(from_before.last(), Some(second_end));
}

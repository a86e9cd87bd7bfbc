//! A resumed step's drain and its log read in one round trip, against a real Redis: the read
//! goes after the drain's script and finds the drained results and the resume's message, from
//! the position the worker's log cache asked for; a drain applied already reads the same log.

use super::script_cache_tests::counting;
use super::scripts::APPLY_ANSWERS;
use super::step_start_tests::{answered_c1, claimed_with_message};
use super::tests::{at, store};
use super::*;
use crate::message::Message;

#[tokio::test]
async fn a_drain_reads_the_log_after_it_from_the_position_asked_in_its_round_trip() {
    let store = store().await;
    let _cache = counting(&store, &[&APPLY_ANSWERS]).await;
    let address = claimed_with_message(&store).await;
    // What a worker would hold of the log: all of it but the suspended turn.
    let before = store.messages(&address).await.unwrap();
    let kept = before.len() - 1;
    let drained = [answered_c1()];
    let resumed = at(&address, "r2", 2);

    let (recording, round_trips) = store.recording_round_trips();
    let applied = recording
        .apply_answers(resumed.run(), &drained, None, Some(kept))
        .await
        .unwrap();
    let sent = round_trips.sent();
    assert_eq!(sent.len(), 1, "{sent:#?}");
    assert_eq!(sent[0].commands, ["apply_answers", "LRANGE"], "{sent:#?}");
    assert_eq!(applied.written, Written::New);
    let after = applied.log_after.expect("the log was read");
    // The suspended turn, then the drained result, then the resume's message.
    assert_eq!(after[0], before[kept]);
    assert_eq!(
        after[1..],
        [
            Message::Tool(drained[0].result.clone()),
            Message::user("go on")
        ],
        "{after:#?}"
    );
    let whole = store.messages(&address).await.unwrap();
    assert_eq!(whole[kept..], after[..]);

    // Applied again (a retried attempt): nothing written, the same log read.
    let again = store
        .apply_answers(resumed.run(), &drained, None, Some(kept))
        .await
        .unwrap();
    assert_eq!(again.written, Written::AlreadyDone);
    assert_eq!(again.log_after, Some(after));
}

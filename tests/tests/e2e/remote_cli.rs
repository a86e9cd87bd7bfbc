//! `baton run --answer` on a tree whose remote child asks a person: the terminal's answers reach
//! the remote child through the consumer's root (the relayed calls are the root's `/status`
//! lists, under the caller's own ids, which the stream never shows), and the tree runs to its
//! end with one child on the producer (started once, resumed once per answer).

use crate::mount::runs;
use crate::remote_relay::{consumer_registry, producer};
use baton_tests::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baton_run_answers_a_remote_childs_question_and_approval_from_standard_input() {
    let (producer, url) = producer().await;
    let consumer = Harness::start(consumer_registry(&url)).await;
    // The question's answer, then the approval's decision; then standard input ends.
    let output = baton_tests::procs::baton_run_answering(
        &consumer.address.to_string(),
        "remote_delegator",
        b"{\"answer\":\"Ada\"}\ny\n",
    )
    .await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("? ask_user"), "{stderr}");
    assert!(stderr.contains("? approve transfer"), "{stderr}");
    let completed = stdout
        .lines()
        .find(|line| line.starts_with("✓ completed"))
        .unwrap_or_else(|| panic!("no completed line in {stdout}"));
    assert!(completed.contains("Ada"), "{completed}");
    // One child: its start, then one resume per answer.
    assert_eq!(runs(&producer, 3).await, 3);
}

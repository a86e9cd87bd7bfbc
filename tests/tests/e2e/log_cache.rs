//! The log a model call is given is the session's log exactly, message for message, whether the
//! step read it whole or took the messages its worker held from the run's last step (or, for a
//! resumed run, from the run it resumes) and read only the rest: a model that records every
//! request it gets, over a session of inline steps, two suspensions and their resumes.

use baton_client::Client as _;
use baton_core::{
    Agent, AgentRegistry, Message, ScriptedModel,
    message::ToolOutcome,
    store::Status,
    tool::{ClientTool, tool},
};
use baton_tests::{Harness, WAIT_LIMIT, agents::AddInput, recording::RecordingModel};
use serde_json::json;

/// Waits until the session is suspended after `steps` committed steps.
async fn suspended_after(harness: &Harness, session: &str, steps: u32) {
    tokio::time::timeout(WAIT_LIMIT, async {
        loop {
            let state = harness.client.status(session).await.unwrap();
            if state.status == Status::SuspendedClientTool && state.step_count == steps {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the session suspends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_model_call_gets_the_whole_log_across_steps_and_resumes() {
    let script = ScriptedModel::default()
        .call("add", json!({"a": 1, "b": 2}))
        .call("ask_user", json!({"question": "Name?"}))
        .call("add", json!({"a": 3, "b": 4}))
        .call("ask_user", json!({"question": "Age?"}))
        .answer("Hello {{result:ask_user}}");
    let (model, requests) = RecordingModel::new(script);
    let agent = Agent::builder("recorded")
        .model(model)
        .tool(
            tool("add", "Adds.", |i: AddInput| async move {
                Ok::<_, String>(i.a + i.b)
            })
            .inline(),
        )
        .client_tool(ClientTool::new("ask_user", "asks", json!({"type": "object"})).unwrap())
        .build()
        .unwrap();
    let harness = Harness::start(AgentRegistry::new([agent]).unwrap()).await;
    let session = harness
        .client
        .start("recorded", "go")
        .await
        .unwrap()
        .session_id;
    for (call, steps, answer) in [("call_2_1", 2, "Ada"), ("call_4_1", 4, "36")] {
        suspended_after(&harness, &session, steps).await;
        let answer = ToolOutcome::Result(json!(answer));
        harness
            .client
            .submit(&session, call, &answer)
            .await
            .unwrap();
        harness.client.resume(&session).await.unwrap();
    }
    harness.chunks_after_until_end(&session, 0).await;

    let log = harness.messages(&session).await;
    let requests: Vec<Vec<Message>> = requests
        .lock()
        .unwrap()
        .iter()
        .map(|call| call.messages.clone())
        .collect();
    assert_eq!(requests.len(), 5, "{requests:#?}");
    // Each request is the log as it was before that step's turn: a prefix of the final log, one
    // turn and its results longer than the last.
    let mut before = 0;
    for request in &requests {
        assert!(request.len() > before, "{requests:#?}");
        assert_eq!(request[..], log[..request.len()], "{requests:#?}");
        before = request.len();
    }
    assert_eq!(log.len(), before + 1);
    assert_eq!(log.last(), Some(&Message::assistant("Hello 36", vec![])));
}

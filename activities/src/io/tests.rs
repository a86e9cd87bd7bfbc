//! The payloads' wire shapes: what recorded histories hold must keep reading.

use super::*;
use baton_core::{
    Agent, AgentRegistry, ScriptedModel,
    store::{ClaimedRun, SessionAddress, SessionState, Status},
    subagent::SubAgentTransport,
};
use serde_json::json;
use std::time::Duration;

#[test]
fn each_run_input_constructor_sends_the_payload_its_starters_sent() {
    let agent = || {
        Agent::builder("demo")
            .model(ScriptedModel::default())
            .max_steps(7)
            .build()
            .unwrap()
    };
    let registry = AgentRegistry::new([agent()]).unwrap();
    let address = SessionAddress::root("s1");
    let policy = ActivityPolicy::default();
    let payload = |input: &RunInput| {
        let mut value = serde_json::to_value(input).unwrap();
        value.as_object_mut().unwrap().remove("policy");
        value
    };
    let expected = |run_id: &str, first_step: u32, max_steps: u32, resume: bool| {
        json!({
            "address": {"rootSessionId": "s1", "sessionId": "s1"},
            "agentType": "demo", "runId": run_id, "streamId": "st1",
            "firstStep": first_step, "maxSteps": max_steps, "resume": resume,
            "shape": "localModelStep",
        })
    };

    let first = RunInput::first(address.clone(), "demo", "r1", "st1", 7, policy.clone());
    assert_eq!(payload(&first), expected("r1", 0, 7, false));
    assert_eq!(first.policy, policy);

    let claimed = ClaimedRun {
        run_id: "r2".into(),
        workflow_id: "agent__demo__s1__resume-r2".into(),
        step_count: 3,
    };
    let resumed = RunInput::resumed(address.clone(), &agent(), &claimed, "st1", policy.clone());
    assert_eq!(payload(&resumed), expected("r2", 3, 7, true));

    let mut state: SessionState = serde_json::from_value(json!({
        "sessionId": "s1", "rootSessionId": "s1", "agentType": "demo",
        "status": "suspended_client_tool", "runId": "r2", "streamId": "st1",
        "stepCount": 4, "lastSequence": 9, "createdAt": 1, "updatedAt": 2,
    }))
    .unwrap();
    assert_eq!(state.status, Status::SuspendedClientTool);
    let described = RunInput::of_session(address.clone(), &state, &registry, policy.clone());
    assert_eq!(payload(&described), expected("r2", 4, 7, false));
    // An agent this worker lacks: no steps cap to give.
    state.agent_type = "gone".into();
    let lacking = RunInput::of_session(address, &state, &registry, policy);
    assert_eq!(lacking.max_steps, 0);
    assert_eq!(lacking.agent_type, "gone");
}

#[test]
fn a_policy_recorded_before_the_retry_fields_reads_with_the_old_fixed_values() {
    let recorded = serde_json::json!({
        "modelTimeout": {"secs": 300, "nanos": 0}, "modelAttempts": 5,
        "toolTimeout": {"secs": 300, "nanos": 0}, "toolAttempts": 3,
        "heartbeatTimeout": {"secs": 30, "nanos": 0},
        "commitTimeout": {"secs": 30, "nanos": 0},
    });
    let policy: ActivityPolicy = serde_json::from_value(recorded).unwrap();
    assert_eq!(policy, ActivityPolicy::default());
    assert_eq!(policy.commit_attempts, 10);
    assert_eq!(policy.retry_initial_interval, Duration::from_millis(200));
    assert_eq!(policy.retry_maximum_interval, Duration::from_secs(10));
}

/// Local sub-agent calls with these ids, in this order.
pub(crate) fn local_calls(ids: &[&str]) -> SubAgentCalls {
    ids.iter()
        .map(|id| SubAgentCall {
            tool_call_id: (*id).to_owned(),
            transport: SubAgentTransport::Local,
        })
        .collect()
}

#[test]
fn a_plan_of_tools_and_local_sub_agents_keeps_the_shape_histories_recorded() {
    let plan = |tool_call_ids: &[&str], sub_agent_call_ids: &[&str]| StepPlan::RunTools {
        tool_call_ids: tool_call_ids.iter().map(|id| (*id).to_owned()).collect(),
        sub_agents: local_calls(sub_agent_call_ids),
        then_suspend: true,
        then_finish: false,
    };
    // As recorded in tests/fixtures/histories, and as a plan with sub-agents was written.
    let tools_only =
        r#"{"kind":"run_tools","toolCallIds":["c0"],"thenSuspend":true,"thenFinish":false}"#;
    let with_children = r#"{"kind":"run_tools","toolCallIds":["c0"],"subAgentCallIds":["c1","c2"],"thenSuspend":true,"thenFinish":false}"#;
    for (recorded, planned) in [
        (tools_only, plan(&["c0"], &[])),
        (with_children, plan(&["c0"], &["c1", "c2"])),
    ] {
        assert_eq!(serde_json::to_string(&planned).unwrap(), recorded);
        assert_eq!(serde_json::from_str::<StepPlan>(recorded).unwrap(), planned);
    }
    let StepPlan::RunTools { sub_agents, .. } = plan(&[], &["c1", "c2"]) else {
        unreachable!("a plan of tools")
    };
    let ids: Vec<String> = sub_agents
        .into_calls()
        .map(|call| {
            assert_eq!(call.transport, SubAgentTransport::Local);
            call.tool_call_id
        })
        .collect();
    assert_eq!(ids, ["c1", "c2"]);
    // Fields absent from plans recorded before they existed read as their defaults.
    let oldest: StepPlan =
        serde_json::from_str(r#"{"kind":"run_tools","toolCallIds":["c0"]}"#).unwrap();
    assert_eq!(
        oldest,
        StepPlan::RunTools {
            tool_call_ids: vec!["c0".to_owned()],
            sub_agents: SubAgentCalls::default(),
            then_suspend: false,
            then_finish: false,
        }
    );
}

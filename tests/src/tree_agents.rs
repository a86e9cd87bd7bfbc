//! The agents of the session-tree tests: parents that delegate to sub-agents, and children that
//! answer, fail, or ask a person (a client tool or an approval). Each scripted agent has its own
//! tool call id prefix, since a call id names one call in the whole tree.

use crate::agents::{AddInput, add, ask_user, transfer};
use baton_core::{Agent, ScriptedModel};
use serde_json::json;

/// `researcher`: answers at once with what it was asked about.
pub fn researcher() -> Agent {
    Agent::builder("researcher")
        .system_prompt("You research.")
        .model(
            ScriptedModel::default()
                .call_id_prefix("r")
                .answer("facts about {{input}}"),
        )
        .build()
        .unwrap()
}

/// `delegator`: step 1 calls two researchers and `add` at once; step 2 answers with the last
/// researcher's output and the sum.
pub fn delegator() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("d")
        .call_all(&[
            ("subagent__researcher", json!({"message": "rust"})),
            ("subagent__researcher", json!({"message": "redis"})),
            ("add", json!({"a": 1, "b": 2})),
        ])
        .answer("{{result:subagent__researcher}} and {{result:add}}");
    Agent::builder("delegator")
        .model(model)
        .tool(add())
        .sub_agent("researcher", "Finds facts.")
        .build()
        .unwrap()
}

/// `broken`: calls `add` every step with a cap of one step, so it fails with
/// `max_steps_exceeded`.
pub fn broken() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("b")
        .call("add", json!({"a": 1, "b": 1}))
        .call("add", json!({"a": 1, "b": 1}));
    Agent::builder("broken")
        .model(model)
        .tool(add())
        .max_steps(1)
        .build()
        .unwrap()
}

/// `delegator_failing`: calls `broken`, then answers with what the call gave.
pub fn delegator_failing() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("f")
        .call("subagent__broken", json!({"message": "try"}))
        .answer("child gave {{result:subagent__broken}}");
    Agent::builder("delegator_failing")
        .model(model)
        .sub_agent("broken", "Always fails.")
        .build()
        .unwrap()
}

/// `child_asker`: asks the user (a client tool), then answers with the reply.
pub fn child_asker() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("ca")
        .call("ask_user", json!({"question": "Which color?"}))
        .answer("child heard {{result:ask_user}}");
    Agent::builder("child_asker")
        .model(model)
        .client_tool(ask_user())
        .build()
        .unwrap()
}

/// `child_asking_twice`: asks the user, then (its resume going on) asks again, then answers with
/// the second reply.
pub fn child_asking_twice() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("cw")
        .call("ask_user", json!({"question": "First?"}))
        .call("ask_user", json!({"question": "Second?"}))
        .answer("child heard {{result:ask_user}} last");
    Agent::builder("child_asking_twice")
        .model(model)
        .client_tool(ask_user())
        .build()
        .unwrap()
}

/// `parent_of_twice_asker`: delegates to `child_asking_twice`, then reports its answer.
pub fn parent_of_twice_asker() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("pw")
        .call(
            "subagent__child_asking_twice",
            json!({"message": "ask twice"}),
        )
        .answer("parent got {{result:subagent__child_asking_twice}}");
    Agent::builder("parent_of_twice_asker")
        .model(model)
        .sub_agent("child_asking_twice", "Asks the user twice.")
        .build()
        .unwrap()
}

/// `child_approver`: calls `transfer`, which needs a person's approval, then reports.
pub fn child_approver() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("cg")
        .call("transfer", json!({"to": "bob", "amount": 5}))
        .answer("child transfer: {{result:transfer}}");
    Agent::builder("child_approver")
        .model(model)
        .tool(transfer())
        .build()
        .unwrap()
}

/// `fan_out`: calls `child_asker` and `child_approver` at once, then answers with both.
pub fn fan_out() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("p")
        .call_all(&[
            ("subagent__child_asker", json!({"message": "ask"})),
            ("subagent__child_approver", json!({"message": "pay"})),
        ])
        .answer("{{result:subagent__child_asker}} | {{result:subagent__child_approver}}");
    Agent::builder("fan_out")
        .model(model)
        .sub_agent("child_asker", "Asks the user.")
        .sub_agent("child_approver", "Pays after approval.")
        .build()
        .unwrap()
}

/// `asking_fan_out`: asks the user (a client tool of its own) and calls `child_approver` at
/// once, so the tree's batch is the root's question and the child's approval.
pub fn asking_fan_out() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("q")
        .call_all(&[
            ("ask_user", json!({"question": "Which account?"})),
            ("subagent__child_approver", json!({"message": "pay"})),
        ])
        .answer("{{result:ask_user}} | {{result:subagent__child_approver}}");
    Agent::builder("asking_fan_out")
        .model(model)
        .client_tool(ask_user())
        .sub_agent("child_approver", "Pays after approval.")
        .build()
        .unwrap()
}

/// `twin_askers`: calls `child_asker` twice at once, so two children on the same script ask
/// under the same model id.
pub fn twin_askers() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("tw")
        .call_all(&[
            ("subagent__child_asker", json!({"message": "ask one"})),
            ("subagent__child_asker", json!({"message": "ask two"})),
        ])
        .answer("twins done");
    Agent::builder("twin_askers")
        .model(model)
        .sub_agent("child_asker", "Asks the user.")
        .build()
        .unwrap()
}

/// How many steps a `busy_child` takes before it answers.
pub const BUSY_STEPS: usize = 2000;

/// `busy_child`: adds one inline, step after step, [`BUSY_STEPS`] times, then answers: a child
/// that is always moving.
pub fn busy_child() -> Agent {
    let mut model = ScriptedModel::default().call_id_prefix("bc");
    for i in 0..BUSY_STEPS {
        model = model.call("tick", json!({"a": i, "b": 1}));
    }
    let tick = baton_core::tool::tool("tick", "Adds two integers.", |i: AddInput| async move {
        i.a.checked_add(i.b).ok_or("overflow")
    })
    .inline();
    Agent::builder("busy_child")
        .model(model.answer("done ticking"))
        .tool(tick)
        .max_steps(BUSY_STEPS as u32 + 1)
        .build()
        .unwrap()
}

/// `busy_parent`: runs four `busy_child`ren at once.
pub fn busy_parent() -> Agent {
    let call = ("subagent__busy_child", json!({"message": "tick"}));
    let model = ScriptedModel::default()
        .call_id_prefix("bp")
        .call_all(&[call.clone(), call.clone(), call.clone(), call])
        .answer("all ticked");
    Agent::builder("busy_parent")
        .model(model)
        .sub_agent("busy_child", "Ticks.")
        .build()
        .unwrap()
}

/// `middle`: delegates to `child_asker` and answers with its output.
pub fn middle() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("m")
        .call("subagent__child_asker", json!({"message": "ask deeper"}))
        .answer("middle got {{result:subagent__child_asker}}");
    Agent::builder("middle")
        .model(model)
        .sub_agent("child_asker", "Asks the user.")
        .build()
        .unwrap()
}

/// `top`: delegates to `middle`, so the question comes from a grandchild.
pub fn top() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("t")
        .call("subagent__middle", json!({"message": "go down"}))
        .answer("top got {{result:subagent__middle}}");
    Agent::builder("top")
        .model(model)
        .sub_agent("middle", "Delegates further.")
        .build()
        .unwrap()
}

/// `delegating_holder`: delegates to `holder`, whose `hold` tool blocks in a worker told to
/// hold (so a test can kill the worker during the child's step).
pub fn delegating_holder() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("h")
        .call("subagent__holder", json!({"message": "hold on"}))
        .answer("parent got {{result:subagent__holder}}");
    Agent::builder("delegating_holder")
        .model(model)
        .sub_agent("holder", "Holds.")
        .build()
        .unwrap()
}

/// `unanswered_parent`: delegates to `asker_deadline`, whose question lapses after a second, so
/// the tree finishes with nobody answering.
pub fn unanswered_parent() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("u")
        .call("subagent__asker_deadline", json!({"message": "ask"}))
        .answer("parent saw {{result:subagent__asker_deadline}}");
    Agent::builder("unanswered_parent")
        .model(model)
        .sub_agent("asker_deadline", "Asks with a short deadline.")
        .build()
        .unwrap()
}

/// `hasty_parent`: delegates to `asker_instant`, whose question lapses at once, so the child's
/// deadline resumes it while (or before) the parent commits its suspension.
pub fn hasty_parent() -> Agent {
    let model = ScriptedModel::default()
        .call_id_prefix("hp")
        .call("subagent__asker_instant", json!({"message": "ask"}))
        .answer("parent saw {{result:subagent__asker_instant}}");
    Agent::builder("hasty_parent")
        .model(model)
        .sub_agent("asker_instant", "Asks with no time to answer.")
        .build()
        .unwrap()
}

/// Every agent of the tree tests.
pub fn all() -> Vec<Agent> {
    vec![
        researcher(),
        delegator(),
        broken(),
        delegator_failing(),
        child_asker(),
        child_approver(),
        fan_out(),
        asking_fan_out(),
        twin_askers(),
        busy_child(),
        busy_parent(),
        middle(),
        top(),
        delegating_holder(),
        unanswered_parent(),
        hasty_parent(),
        crate::agents::asker_deadline("asker_instant", std::time::Duration::ZERO),
    ]
}

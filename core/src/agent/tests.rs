//! The checks of agent definitions and of the registry.

use super::*;
use crate::{scripted::ScriptedModel, tool::tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Nothing {}

fn noop(name: &str) -> impl ServerTool + 'static {
    tool(name, "does nothing", |_: Nothing| async {
        Ok::<_, String>(())
    })
}

#[test]
fn definitions_are_checked() {
    let agent = Agent::builder("demo")
        .model(ScriptedModel::default())
        .tool(noop("b"))
        .tool(noop("a"))
        .max_steps(3)
        .build()
        .unwrap();
    let names: Vec<_> = agent.tool_specs().iter().map(|s| s.name.clone()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(agent.max_steps(), 3);

    let duplicate = Agent::builder("demo")
        .model(ScriptedModel::default())
        .tool(noop("a"))
        .tool(noop("a"))
        .build()
        .unwrap_err();
    assert_eq!(
        duplicate,
        DefinitionError::DuplicateTool {
            agent: "demo".into(),
            tool: "a".into()
        }
    );
    assert!(matches!(
        Agent::builder("bad__name")
            .model(ScriptedModel::default())
            .build(),
        Err(DefinitionError::InvalidName(_))
    ));
    assert!(matches!(
        Agent::builder("x").build(),
        Err(DefinitionError::MissingModel { .. })
    ));
    assert!(matches!(
        Agent::builder("x")
            .model(ScriptedModel::default())
            .max_steps(0)
            .build(),
        Err(DefinitionError::ZeroMaxSteps(_))
    ));

    let ask = || crate::tool::ClientTool::new("ask", "asks", serde_json::json!({})).unwrap();
    let mixed = Agent::builder("mixed")
        .model(ScriptedModel::default())
        .tool(noop("z"))
        .client_tool(ask().timeout(Duration::from_secs(7)))
        .client_tool_timeout(Duration::from_secs(9))
        .build()
        .unwrap();
    let names: Vec<_> = mixed.tool_specs().iter().map(|s| s.name.clone()).collect();
    assert_eq!(names, ["ask", "z"]);
    assert!(matches!(mixed.any_tool("ask"), Some(AgentTool::Client(_))));
    assert!(matches!(mixed.any_tool("z"), Some(AgentTool::Server(_))));
    assert_eq!(
        mixed.client_tool_timeout(mixed.client_tool("ask").unwrap()),
        Duration::from_secs(7)
    );
    assert_eq!(mixed.client_tool_timeout(&ask()), Duration::from_secs(9));
    assert_eq!(mixed.completed_retention(), DEFAULT_COMPLETED_RETENTION);
    let clash = Agent::builder("x")
        .model(ScriptedModel::default())
        .tool(noop("ask"))
        .client_tool(ask())
        .build();
    assert!(matches!(clash, Err(DefinitionError::DuplicateTool { .. })));
    let reserved = Agent::builder("x")
        .model(ScriptedModel::default())
        .tool(noop("subagent__helper"))
        .build();
    assert_eq!(
        reserved.unwrap_err(),
        DefinitionError::ReservedToolName("subagent__helper".into())
    );

    let registry = AgentRegistry::new([agent]).unwrap();
    assert!(registry.get("demo").is_some());
    assert!(registry.get("nope").is_none());
    let twice = AgentRegistry::new([
        Agent::builder("x")
            .model(ScriptedModel::default())
            .build()
            .unwrap(),
        Agent::builder("x")
            .model(ScriptedModel::default())
            .build()
            .unwrap(),
    ]);
    assert!(matches!(twice, Err(DefinitionError::DuplicateAgent(_))));
}

fn delegating(name: &str, sub_agents: &[&str]) -> Agent {
    sub_agents
        .iter()
        .fold(
            Agent::builder(name).model(ScriptedModel::default()),
            |builder, sub| builder.sub_agent(sub, "helps"),
        )
        .build()
        .unwrap()
}

#[test]
fn sub_agents_are_tools_and_the_registry_refuses_unknown_types_and_cycles() {
    let planner = delegating("planner", &["researcher"]);
    let names: Vec<_> = planner
        .tool_specs()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(names, ["subagent__researcher"]);
    assert!(matches!(
        planner.any_tool("subagent__researcher"),
        Some(AgentTool::SubAgent(sub)) if sub.agent_type() == "researcher"
    ));
    let tree = AgentRegistry::new([
        delegating("planner", &["researcher", "writer"]),
        delegating("researcher", &["writer"]),
        delegating("writer", &[]),
    ]);
    assert!(tree.is_ok());

    let unknown = AgentRegistry::new([delegating("planner", &["ghost"])]).unwrap_err();
    assert_eq!(
        unknown.to_string(),
        "agent \"planner\" calls the sub-agent \"ghost\", which the registry does not have"
    );
    let cycle = AgentRegistry::new([
        delegating("a", &["b"]),
        delegating("b", &["c"]),
        delegating("c", &["a"]),
    ])
    .unwrap_err();
    assert_eq!(
        cycle.to_string(),
        "agent \"a\" calls sub-agents in a cycle: a -> b -> c -> a"
    );
    let itself = AgentRegistry::new([delegating("a", &["a"])]).unwrap_err();
    assert!(matches!(itself, DefinitionError::SubAgentCycle { .. }));
}

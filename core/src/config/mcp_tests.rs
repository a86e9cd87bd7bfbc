//! The checks of an agents file's MCP servers and of an agent's `mcp_servers`.

use super::tests::catalogue;
use super::*;
use crate::{ServerTool, tool::tool};
use std::sync::Arc;

#[test]
fn mcp_servers_are_read_and_bad_declarations_refused_with_their_line() {
    let text = r#"
[[mcp_server]]
name = "files"
command = "python3"
args = ["files.py"]
env = { ROOT = "/srv" }
tools = ["read", "delete"]
rename = { read = "read_file" }
approval = { delete = false }

[[mcp_server]]
name = "search"
url = "https://mcp.example/mcp"
bearer_env = "SEARCH_TOKEN"
headers = { x-tenant = "t1" }
timeout_secs = 5
questions = "hold"
"#;
    let servers = super::mcp_servers_from_toml(text).unwrap();
    assert_eq!(servers.len(), 2);
    assert_eq!(servers[0].name, "files");
    assert_eq!(servers[0].line, 2);
    assert!(matches!(
        &servers[0].transport,
        super::McpTransportConfig::Stdio { command, args, env }
            if command == "python3" && args == &["files.py"] && env["ROOT"] == "/srv"
    ));
    assert_eq!(servers[0].rename["read"], "read_file");
    assert!(!servers[0].approval["delete"]);
    assert!(matches!(
        &servers[1].transport,
        super::McpTransportConfig::Http { url, bearer_env: Some(v), .. }
            if url == "https://mcp.example/mcp" && v == "SEARCH_TOKEN"
    ));
    assert_eq!(servers[1].timeout, Some(std::time::Duration::from_secs(5)));
    assert!(!servers[0].hold_questions && servers[1].hold_questions);

    let refused = |body: &str| super::mcp_servers_from_toml(body).unwrap_err();
    let both = refused("[[mcp_server]]\nname = \"x\"\ncommand = \"a\"\nurl = \"http://h/mcp\"\n");
    assert!(both.reason.contains("not both"), "{both}");
    assert_eq!(both.line, 1);
    let neither = refused("\n[[mcp_server]]\nname = \"x\"\n");
    assert!(neither.reason.contains("needs `command`"), "{neither}");
    assert_eq!(neither.line, 2);
    let ftp = refused("[[mcp_server]]\nname = \"x\"\nurl = \"ftp://h\"\n");
    assert!(ftp.reason.contains("not an http://"), "{ftp}");
    let mixed = refused("[[mcp_server]]\nname = \"x\"\nurl = \"http://h\"\nenv = { A = \"1\" }\n");
    assert!(mixed.reason.contains("for a `command` server"), "{mixed}");
    let unselected = refused(
        "[[mcp_server]]\nname = \"x\"\ncommand = \"a\"\ntools = [\"t\"]\nrename = { u = \"v\" }\n",
    );
    assert!(
        unselected.reason.contains("does not select"),
        "{unselected}"
    );
    let clash = refused(
        "[[mcp_server]]\nname = \"x\"\ncommand = \"a\"\nrename = { t = \"v\", u = \"v\" }\n",
    );
    assert!(clash.reason.contains("renamed \"v\""), "{clash}");
    let zero = refused("[[mcp_server]]\nname = \"x\"\ncommand = \"a\"\ntimeout_secs = 0\n");
    assert!(zero.reason.contains("above 0"), "{zero}");
    let twice = refused(
        "[[mcp_server]]\nname = \"x\"\ncommand = \"a\"\n[[mcp_server]]\nname = \"x\"\ncommand = \"b\"\n",
    );
    assert!(twice.reason.contains("declared twice"), "{twice}");
    assert_eq!(twice.line, 4);
    let questions =
        refused("[[mcp_server]]\nname = \"x\"\ncommand = \"a\"\nquestions = \"wait\"\n");
    assert!(
        questions
            .reason
            .contains(r#""suspend" or "hold", not "wait""#),
        "{questions}"
    );
    let unknown = refused("[[mcp_server]]\nname = \"x\"\ncommand = \"a\"\ncwd = \"/\"\n");
    assert!(unknown.reason.contains("unknown field"), "{unknown}");
}

/// A toolset of one fixed tool, for `mcp_servers`.
struct OneTool(Arc<crate::tool::toolset::Tools>);

#[async_trait::async_trait]
impl crate::tool::Toolset for OneTool {
    fn name(&self) -> &str {
        "files"
    }
    fn current(&self) -> Arc<crate::tool::toolset::Tools> {
        self.0.clone()
    }
    fn tool(&self, name: &str) -> Option<Arc<dyn ServerTool>> {
        self.0.get(name).cloned()
    }
    async fn refresh(&self) {}
}

#[test]
fn an_agents_mcp_servers_are_toolsets_and_an_unknown_one_is_refused_with_its_line() {
    let read = tool("read", "Reads.", |_: serde_json::Value| async {
        Ok::<_, String>("text")
    });
    let tools: crate::tool::toolset::Tools =
        [("read".to_owned(), Arc::new(read) as Arc<dyn ServerTool>)].into();
    let toolsets: Toolsets = [(
        "files".to_owned(),
        Arc::new(OneTool(Arc::new(tools))) as Arc<dyn crate::tool::Toolset>,
    )]
    .into();
    let file = |servers: &str| {
        format!(
            "[[agent]]\nname = \"reader\"\nmcp_servers = {servers}\n[agent.model]\nkind = \"scripted\"\nturns = [{{ text = \"ok\" }}]\n"
        )
    };
    let agents = agents_from_toml_with_toolsets(
        &file(r#"["files"]"#),
        &catalogue(),
        &toolsets,
        &ScriptedOnly,
    )
    .unwrap();
    let names: Vec<String> = agents[0]
        .tool_specs()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(names, ["read"]);
    assert!(agents[0].tool("read").is_some());
    let refused = agents_from_toml_with_toolsets(
        &file(r#"["files", "mail"]"#),
        &catalogue(),
        &toolsets,
        &ScriptedOnly,
    )
    .unwrap_err();
    assert!(
        refused
            .reason
            .contains(r#"unknown MCP server "mail" in mcp_servers"#),
        "{refused}"
    );
    assert_eq!(refused.line, 3);
}

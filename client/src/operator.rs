//! The operator's commands of `baton`: `sessions` (search), `pending` (the inbox), and the
//! lookup that lets `answer`, `approve` and `deny` take just a call id from the inbox.

use anyhow::Context;
use baton_client::Client;
use baton_wire::search::{MAX_PAGE_LIMIT, PendingDetail, PersonCallKind, SessionSearch};
use clap::Args;
use std::time::{SystemTime, UNIX_EPOCH};

/// The filters of `baton sessions` and `baton pending` (all must hold).
#[derive(Debug, Args)]
pub(crate) struct Filters {
    /// active, suspended_client_tool, completed, failed or interrupted.
    #[arg(long)]
    status: Option<String>,
    /// The agent type.
    #[arg(long)]
    agent: Option<String>,
    /// The end user the sessions are for.
    #[arg(long = "user")]
    user_id: Option<String>,
    /// A tag each session carries (repeatable: all of them).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// `key=value`: a metadata entry (repeatable).
    #[arg(long = "metadata", value_parser = key_value)]
    metadata: Vec<(String, String)>,
    /// Only sessions with a client call or approval open anywhere in the tree.
    #[arg(long)]
    awaiting_person: bool,
    /// Last activity at or after / at or before (ms since the epoch).
    #[arg(long)]
    updated_after: Option<u64>,
    #[arg(long)]
    updated_before: Option<u64>,
    /// Rows per page (1 to 100).
    #[arg(long, default_value_t = 20)]
    limit: usize,
    /// Continue from the `nextCursor` of an earlier page.
    #[arg(long)]
    cursor: Option<String>,
    /// Child sessions too.
    #[arg(long)]
    include_children: bool,
    /// Only this tree: the root, then its sessions.
    #[arg(long)]
    root: Option<String>,
}

fn key_value(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .filter(|(key, _)| !key.is_empty())
        .ok_or_else(|| "expected key=value".to_owned())
}

impl Filters {
    fn search(self) -> anyhow::Result<SessionSearch> {
        Ok(SessionSearch {
            status: self
                .status
                .map(|status| {
                    baton_wire::Status::parse(&status)
                        .with_context(|| format!("unknown status {status:?}"))
                })
                .transpose()?,
            agent: self.agent,
            user_id: self.user_id,
            tags: self.tags,
            metadata: self.metadata,
            awaiting_person: self.awaiting_person,
            updated_after: self.updated_after,
            updated_before: self.updated_before,
            limit: self.limit,
            cursor: self.cursor,
            include_children: self.include_children,
            root: self.root,
        })
    }
}

/// `baton sessions`: one page, as JSON or one line per session.
pub(crate) async fn sessions(
    client: &dyn Client,
    filters: Filters,
    json: bool,
) -> anyhow::Result<()> {
    let page = client.sessions(&filters.search()?).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&page)?);
        return Ok(());
    }
    let now = now_ms();
    for row in &page.sessions {
        println!(
            "{}  {:<22} {:<16} pending {:<3} steps {:<4} {:>8} ago{}{}",
            row.session_id,
            row.status.as_str(),
            printable(&row.agent_type),
            row.pending_calls,
            row.step_count,
            age(now.saturating_sub(row.updated_at)),
            row.user_id
                .as_deref()
                .map(|user| format!("  user {}", printable(user)))
                .unwrap_or_default(),
            if row.tags.is_empty() {
                String::new()
            } else {
                format!("  tags {}", printable(&row.tags.join(",")))
            },
        );
    }
    print_next(page.next_cursor.as_deref());
    Ok(())
}

/// `baton pending`: one page of the inbox, as JSON or one line per call.
pub(crate) async fn pending(
    client: &dyn Client,
    filters: Filters,
    json: bool,
) -> anyhow::Result<()> {
    let page = client.pending(&filters.search()?).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&page)?);
        return Ok(());
    }
    for call in &page.calls {
        let kind = match call.kind {
            PersonCallKind::ClientTool => "client tool",
            PersonCallKind::Approval => "approval",
        };
        println!(
            "{}  {kind:<11} {}({})  session {}{}  agent {}{}  waiting {}",
            call.tool_call_id,
            printable(&call.tool_name),
            printable(&call.input.to_string()),
            call.session_id,
            if call.owner_session_id == call.session_id {
                String::new()
            } else {
                format!(" (child {})", call.owner_session_id)
            },
            printable(&call.agent_type),
            call.user_id
                .as_deref()
                .map(|user| format!("  user {}", printable(user)))
                .unwrap_or_default(),
            age(call.age_ms.unwrap_or_default()),
        );
        println!("    {}", what_it_needs(call));
    }
    print_next(page.next_cursor.as_deref());
    Ok(())
}

/// What answering `call` takes, as the command that does it: an approval's decision (with its
/// approval id), or a client call's result (with the output schema its render hint names).
fn what_it_needs(call: &PendingDetail) -> String {
    let id = &call.tool_call_id;
    match call.kind {
        PersonCallKind::Approval => format!(
            "decide: baton approve {id}  |  baton deny {id} --reason TEXT  (approval id {})",
            printable(call.approval_id.as_deref().unwrap_or("?"))
        ),
        PersonCallKind::ClientTool => {
            let schema = call
                .render
                .as_ref()
                .and_then(|render| render.get("outputSchema"))
                .map(|schema| format!("  (JSON matching {})", printable(&schema.to_string())))
                .unwrap_or_default();
            format!("answer: baton answer {id} RESULT{schema}")
        }
    }
}

/// The waiting call with this id, found page by page in the inbox. Call ids are unique within
/// a session tree, not across trees (a fork awaits its original's calls under the same ids): an
/// id waiting in more than one tree is refused, naming them, rather than answered in one of
/// them at random.
pub(crate) async fn find_pending(
    client: &dyn Client,
    tool_call_id: &str,
) -> anyhow::Result<PendingDetail> {
    let mut search = SessionSearch {
        limit: MAX_PAGE_LIMIT,
        ..SessionSearch::default()
    };
    let mut found: Vec<PendingDetail> = Vec::new();
    loop {
        let page = client.pending(&search).await?;
        found.extend(
            page.calls
                .into_iter()
                .filter(|call| call.tool_call_id == tool_call_id),
        );
        match page.next_cursor {
            Some(cursor) => search.cursor = Some(cursor),
            None => break,
        }
    }
    found.dedup_by(|a, b| a.session_id == b.session_id && a.owner_session_id == b.owner_session_id);
    match found.len() {
        0 => anyhow::bail!("no call {tool_call_id:?} is waiting on a person (see `baton pending`)"),
        1 => Ok(found.remove(0)),
        n => {
            let sessions: Vec<&str> = found.iter().map(|call| call.session_id.as_str()).collect();
            anyhow::bail!(
                "call {tool_call_id:?} waits in {n} sessions ({}): name the session \
                 (`baton submit <session> {tool_call_id} --result ...`, \
                 `baton approve|deny <session> {tool_call_id} <approvalId>`)",
                sessions.join(", ")
            )
        }
    }
}

fn print_next(cursor: Option<&str>) {
    if let Some(cursor) = cursor {
        println!("next page: --cursor {cursor}");
    }
}

/// Text the server holds from its callers, with control characters escaped.
fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

fn age(ms: u64) -> String {
    match ms / 1000 {
        secs if secs < 120 => format!("{secs}s"),
        secs if secs < 7200 => format!("{}m", secs / 60),
        secs if secs < 172_800 => format!("{}h", secs / 3600),
        secs => format!("{}d", secs / 86_400),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

//! `baton`'s following of a session: its chunks printed as they come until the run ends or
//! pauses, and what a pause does (stop, answer from the terminal and resume, or go on watching);
//! a tree's awaited calls found through its root. With `--answer`, a running call's question
//! (an MCP server's elicitation) is answered from the terminal too, the run going on.

use anyhow::Context;
use baton_client::{
    Client,
    prompt::{self, Awaited},
    render::{Printer, field, json as json_line},
};
use baton_wire::{ChunkKind, chunk::EndStatus};
use futures::StreamExt;
use std::{collections::HashMap, process::ExitCode};

/// Where following a session stopped.
enum Stop {
    Ended(ExitCode),
    /// The run suspended on these calls; `after` is the last sequence seen.
    Suspended {
        tool_call_ids: Vec<String>,
        after: u64,
    },
    /// A running call asks a person (the run goes on waiting for the answer); `after` is the
    /// question's sequence.
    Asked {
        question: Awaited,
        after: u64,
    },
}

/// What following a session tree remembers: each tool call seen (to show what an awaited call
/// asks), each approval id, and the child session each sub-agent call started.
#[derive(Default)]
struct Seen {
    calls: HashMap<String, (String, serde_json::Value)>,
    approvals: HashMap<String, String>,
    children: HashMap<String, String>,
    /// Whether a running call's question stops the follow (to answer it), or is only printed.
    stop_at_questions: bool,
    /// The questions answered at their chunk: one a call suspended its run on is awaited by the
    /// `suspended` chunk that follows, and is not asked twice.
    answered: std::collections::HashSet<String>,
}

/// Prints a session's chunks after `from` until its run ends or suspends, remembering what a
/// suspension needs (see [`Seen`]).
async fn follow_once(
    client: &dyn Client,
    session_id: &str,
    from: u64,
    json: bool,
    seen: &mut Seen,
) -> anyhow::Result<Stop> {
    follow_quietly(client, session_id, from, Some(json), seen).await
}

/// [`follow_once`], stopping at a running call's question too (`baton run --answer`).
async fn follow_to_question(
    client: &dyn Client,
    session_id: &str,
    from: u64,
    json: bool,
    seen: &mut Seen,
) -> anyhow::Result<Stop> {
    seen.stop_at_questions = true;
    follow_quietly(client, session_id, from, Some(json), seen).await
}

/// [`follow_once`], printing the chunks as JSON (`Some(true)`), as lines (`Some(false)`) or not
/// at all (`None`: a child's chunks, which its root's stream has shown already).
async fn follow_quietly(
    client: &dyn Client,
    session_id: &str,
    from: u64,
    print: Option<bool>,
    seen: &mut Seen,
) -> anyhow::Result<Stop> {
    let mut chunks = std::pin::pin!(client.follow(session_id, from));
    let mut printer = Printer::default();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.context("following the session's stream")?;
        match print {
            Some(true) => println!("{}", json_line(&chunk)?),
            Some(false) => {
                // A closed terminal or pipe ends nothing: the follow goes on to the run's end.
                let _ = printer.print(&mut std::io::stdout().lock(), &chunk);
            }
            None => {}
        }
        match chunk.kind {
            ChunkKind::ToolStart {
                tool_call_id,
                tool_name,
                input,
                ..
            } => {
                seen.calls.insert(tool_call_id, (tool_name, input));
            }
            ChunkKind::ToolApprovalRequest {
                tool_call_id,
                approval_id,
                ..
            } => {
                seen.approvals.insert(tool_call_id, approval_id);
            }
            ChunkKind::SubagentStart {
                sub_session_id,
                tool_call_id,
                ..
            } => {
                seen.children.insert(tool_call_id, sub_session_id);
            }
            ChunkKind::Question {
                question_id,
                tool_name,
                message,
                schema,
                ..
            } if seen.stop_at_questions => {
                let question = Awaited {
                    id: question_id,
                    tool: tool_name,
                    input: serde_json::json!({ "question": message }),
                    approval_id: None,
                    output_schema: Some(schema),
                };
                return Ok(Stop::Asked {
                    question,
                    after: chunk.sequence,
                });
            }
            ChunkKind::End { status, .. } => {
                return Ok(Stop::Ended(match status {
                    EndStatus::Completed | EndStatus::Interrupted => ExitCode::SUCCESS,
                    EndStatus::Failed => ExitCode::FAILURE,
                }));
            }
            // The run waits for client answers and no workflow runs: nothing more comes until
            // someone answers and resumes.
            ChunkKind::Suspended { tool_call_ids, .. } => {
                return Ok(Stop::Suspended {
                    tool_call_ids,
                    after: chunk.sequence,
                });
            }
            _ => {}
        }
    }
    anyhow::bail!("the stream ended before the run did")
}

/// What following a session does when its run pauses for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AtPause {
    /// Stop there.
    Stop,
    /// Answer each awaited call from standard input (one line per call: JSON, or else taken as
    /// text; y/N for an approval), resume, and go on.
    Answer,
    /// Name the calls it waits on and go on following (someone else answers them).
    Watch,
}

/// Follows a session from `from` (exclusive) until its run ends, or pauses and `at_pause` says
/// stop.
pub(crate) async fn follow(
    client: &dyn Client,
    session_id: &str,
    from: u64,
    json: bool,
    at_pause: AtPause,
) -> anyhow::Result<ExitCode> {
    let mut seen = Seen::default();
    let mut from = from;
    loop {
        let stop = match at_pause {
            AtPause::Answer => {
                follow_to_question(client, session_id, from, json, &mut seen).await?
            }
            AtPause::Stop | AtPause::Watch => {
                follow_once(client, session_id, from, json, &mut seen).await?
            }
        };
        match stop {
            Stop::Ended(code) => return Ok(code),
            // A call's question, answered through this (the root) session: a running call reads
            // the answer and goes on, with no resume; one that suspended its run on it is
            // resumed at the `suspended` chunk that follows.
            Stop::Asked { question, after } => {
                let id = question.id.clone();
                prompt::answer_call(client, session_id, question).await?;
                seen.answered.insert(id);
                from = after;
            }
            Stop::Suspended { .. } if at_pause == AtPause::Stop => return Ok(ExitCode::SUCCESS),
            Stop::Suspended {
                tool_call_ids,
                after,
            } if at_pause == AtPause::Watch => {
                if !json {
                    let ids: Vec<String> = tool_call_ids
                        .iter()
                        .map(|id| field(id).to_string())
                        .collect();
                    println!(
                        "waiting on a person for {} (answer with baton pending / answer / \
                         approve); watching on",
                        ids.join(", ")
                    );
                }
                from = after;
            }
            Stop::Suspended {
                tool_call_ids,
                after,
            } => {
                // Every call of the tree is answered through this (the root) session. A resume
                // that goes on with a remote child first keeps the run: the child's next pause
                // writes the run's `suspended` chunk again, read as this one was.
                let calls = awaited_calls(client, session_id, tool_call_ids, &mut seen).await?;
                for call in calls {
                    prompt::answer_call(client, session_id, call).await?;
                }
                let resumed = client.resume(session_id).await?;
                if !json {
                    println!("resumed as run {}", field(&resumed.run_id));
                }
                from = after;
            }
        }
    }
}

/// The calls the tree of `session_id` (a root) waits on a person for: those its `/status`
/// lists, which include the calls a remote child relayed (their ids are the caller's own, never
/// on the stream); when it lists none, those the stream showed, reading each sub-agent's
/// stream (the root's showed its chunks) to the calls it awaits.
async fn awaited_calls(
    client: &dyn Client,
    session_id: &str,
    tool_call_ids: Vec<String>,
    seen: &mut Seen,
) -> anyhow::Result<Vec<Awaited>> {
    let listed = client.status(session_id).await?.pending;
    let tool_call_ids: Vec<String> = tool_call_ids
        .into_iter()
        .filter(|id| !seen.answered.contains(id))
        .collect();
    if !listed.is_empty() {
        let calls = listed
            .into_iter()
            .filter(|call| !seen.answered.contains(&call.tool_call_id))
            .map(|call| Awaited {
                id: call.tool_call_id,
                tool: call.tool_name,
                input: call.input,
                approval_id: call.approval_id,
                output_schema: call.output_schema,
            })
            .collect();
        return Ok(calls);
    }
    let mut awaited: std::collections::VecDeque<String> = tool_call_ids.into();
    let mut leaves = Vec::new();
    while let Some(id) = awaited.pop_front() {
        let Some(child) = seen.children.get(&id).cloned() else {
            let (tool, input) = seen.calls.get(&id).cloned().unwrap_or_default();
            let approval_id = seen.approvals.get(&id).cloned();
            leaves.push(Awaited {
                id,
                tool,
                input,
                approval_id,
                output_schema: None,
            });
            continue;
        };
        let answering = std::mem::take(&mut seen.stop_at_questions);
        let stop = follow_quietly(client, &child, 0, None, seen).await?;
        seen.stop_at_questions = answering;
        if let Stop::Suspended { tool_call_ids, .. } = stop {
            awaited.extend(tool_call_ids);
        }
    }
    Ok(leaves)
}

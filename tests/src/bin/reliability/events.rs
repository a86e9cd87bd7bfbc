//! The client-call log events the Baton processes wrote (JSON lines, target
//! `baton::client_call`): each accepted answer must show up as `client_call.submitted` on a
//! server and, once in the log, as `client_call.drained` on a worker.

use crate::{load::Accepted, table::Row};
use std::{collections::HashSet, path::PathBuf};

/// (session, tool call) pairs of each event read.
#[derive(Default)]
struct Events {
    submitted: HashSet<(String, String)>,
    drained: HashSet<(String, String)>,
}

fn read(files: &[PathBuf]) -> Events {
    let mut events = Events::default();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for line in text.lines() {
            let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let key = || {
                (
                    event["session_id"].as_str().unwrap_or("").to_owned(),
                    event["tool_call_id"].as_str().unwrap_or("").to_owned(),
                )
            };
            match event["event"].as_str() {
                Some("client_call.submitted") => {
                    events.submitted.insert(key());
                }
                Some("client_call.drained") => {
                    events.drained.insert(key());
                }
                _ => {}
            }
        }
    }
    events
}

/// Checks the events of `accepted` in `files`. A missing `submitted` event fails the row unless
/// the client had to retry (a submit whose write landed while its answer was lost is stored
/// without its event); a missing `drained` event is only noted (a worker killed between the
/// drain and its log line loses the line, and the retried drain finds nothing to do).
pub fn check(accepted: &[Accepted], files: &[PathBuf], retried: bool, row: &mut Row) {
    let events = read(files);
    let pair = |a: &Accepted| (a.session_id.clone(), a.tool_call_id.clone());
    let unsubmitted = accepted
        .iter()
        .filter(|a| !events.submitted.contains(&pair(a)))
        .count();
    let undrained = accepted
        .iter()
        .filter(|a| !events.drained.contains(&pair(a)))
        .count();
    let summary = format!(
        "log events: client_call.submitted for {} of {} accepted answers, client_call.drained for {}",
        accepted.len() - unsubmitted,
        accepted.len(),
        accepted.len() - undrained
    );
    if unsubmitted > 0 && !retried {
        row.require(false, summary);
    } else if unsubmitted > 0 || undrained > 0 {
        row.note(summary);
    }
}

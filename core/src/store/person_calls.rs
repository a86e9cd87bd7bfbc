//! The calls of a session tree that wait on a person: pending client calls and approvals that
//! have no stored answer and have not lapsed. What `/pending`, `/status` and the search index's
//! `awaiting` term read, with the calls a paused remote child relayed (`relay.rs`); plain reads
//! of one tree, so one slot.

use super::relay::relayed_groups_of;
use super::{
    Error, PendingCall, PendingKind, SessionAddress, Store, from_json,
    keys::{Key, state_field},
    now_ms,
};
use crate::meta::SessionMeta;
use std::collections::{HashMap, HashSet};

/// A call waiting on a person, with the session whose run awaits it.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonCall {
    pub owner: SessionAddress,
    pub call: PendingCall,
    /// The owning session's agent and user.
    pub agent_type: String,
    pub user_id: Option<String>,
}

impl Store {
    /// The calls waiting on a person in `address`'s session alone, or (`whole_tree`) in every
    /// session of its tree when `address` is the root: in session order, then call order.
    pub async fn person_calls(
        &self,
        address: &SessionAddress,
        whole_tree: bool,
    ) -> Result<Vec<PersonCall>, Error> {
        let mut sessions = vec![address.clone()];
        if whole_tree && address.is_root() {
            sessions.extend(self.tree_sessions(address).await?.into_iter().map(|child| {
                SessionAddress {
                    root_session_id: address.root_session_id.clone(),
                    session_id: child,
                }
            }));
        }
        let mut pipe = redis::pipe();
        for session in &sessions {
            pipe.hvals(self.key(session, Key::Pending))
                .hkeys(self.key(session, Key::Answers))
                .cmd("HMGET")
                .arg(self.key(session, Key::State))
                .arg(state_field::AGENT_TYPE)
                .arg(state_field::META)
                .hgetall(self.key(session, Key::Relayed));
        }
        let replies: Vec<redis::Value> = pipe.query_async(&mut self.conn()).await?;
        let now = now_ms();
        let mut calls = Vec::new();
        for (session, replies) in sessions.iter().zip(replies.chunks(4)) {
            let [pending, answered, owner, relayed] = replies else {
                continue;
            };
            let pending: Vec<String> = redis::from_redis_value(pending)?;
            let answered: Vec<String> = redis::from_redis_value(answered)?;
            let (agent_type, meta): (Option<String>, Option<String>) =
                redis::from_redis_value(owner)?;
            let state_key = self.key(session, Key::State);
            let user_id = meta
                .map(|text| from_json::<SessionMeta>(&state_key, &text))
                .transpose()?
                .and_then(|meta| meta.user_id);
            let answered: HashSet<&str> = answered.iter().map(String::as_str).collect();
            let key = self.key(session, Key::Pending);
            let mut own: Vec<PendingCall> = pending
                .iter()
                .map(|text| from_json(&key, text))
                .collect::<Result<_, _>>()?;
            // A remote child's relayed calls while the remote call awaits it (see `relay.rs`).
            let relayed: HashMap<String, String> = redis::from_redis_value(relayed)?;
            let awaiting: HashSet<&str> = own
                .iter()
                .filter(|call| call.kind.is_sub_agent())
                .map(|call| call.tool_call_id.as_str())
                .filter(|id| !answered.contains(id))
                .collect();
            let relayed_key = self.key(session, Key::Relayed);
            let relayed_calls: Vec<PendingCall> = relayed_groups_of(&relayed_key, &relayed)?
                .into_iter()
                .filter(|group| awaiting.contains(group.via_call_id.as_str()))
                .flat_map(|group| group.calls)
                .filter(|(_, answered)| !answered)
                .map(|(relayed, _)| relayed.call)
                .collect();
            own.retain(|call| {
                matches!(call.kind, PendingKind::Client | PendingKind::Approval)
                    && !answered.contains(call.tool_call_id.as_str())
            });
            own.extend(relayed_calls);
            own.retain(|call| call.deadline_at > now);
            own.sort_by(|a, b| (a.step, &a.tool_call_id).cmp(&(b.step, &b.tool_call_id)));
            calls.extend(own.into_iter().map(|call| PersonCall {
                owner: session.clone(),
                call,
                agent_type: agent_type.clone().unwrap_or_default(),
                user_id: user_id.clone(),
            }));
        }
        Ok(calls)
    }
}

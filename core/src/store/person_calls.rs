//! The calls of a session tree that wait on a person: pending client calls and approvals that
//! have no stored answer and have not lapsed. What `/pending`, `/status` and the search index's
//! `awaiting` term read, and the chat's tree read (`AwaitingSession`), with the calls a paused
//! remote child relayed (`relay.rs`) and the open questions of running calls (`question.rs`);
//! plain reads of one tree, so one slot, pipelined.

use super::question::{Question, open_questions_of};
use super::relay::{RelayedCall, relayed_answer_of, relayed_groups_of};
use super::{
    Error, PendingAsk, PendingCall, PendingKind, SessionAddress, SessionState, Store, StoredAnswer,
    from_json,
    keys::{Key, state_field},
    now_ms,
};
use crate::{
    meta::SessionMeta,
    session::Status,
    tool::ask::{Asked, QUESTION_TOOL, question_input, question_render},
};
use std::{
    collections::{HashMap, HashSet},
    str::FromStr,
};

/// A call waiting on a person, with the session whose run awaits it.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonCall {
    pub owner: SessionAddress,
    pub call: PendingCall,
    /// The owning session's agent and user.
    pub agent_type: String,
    pub user_id: Option<String>,
    /// For a call a remote child relayed: its tool's render hint on the producer, if any (a
    /// local call's comes from this server's agent).
    pub render: Option<serde_json::Value>,
}

/// A session of a tree as the reads of its people-in-the-loop see it: its agent, status and
/// user, the calls its run awaits (in call order) and the answers stored for them.
#[derive(Debug, Clone, PartialEq)]
pub struct AwaitingSession {
    pub address: SessionAddress,
    /// `None`: the session has no state (gone, or not written yet).
    pub agent_type: Option<String>,
    pub status: Option<Status>,
    pub user_id: Option<String>,
    pub pending: Vec<PendingCall>,
    pub answers: HashMap<String, StoredAnswer>,
    /// The calls a paused remote child relayed through one of `pending`'s unanswered remote
    /// sub-agent calls (see `relay.rs`), with the answer stored for each, if any.
    pub relayed: Vec<RelayedEntry>,
    /// The open questions a running call of this session's current run asks a person (see
    /// `question.rs`), oldest first.
    pub questions: Vec<Question>,
}

/// A call a paused remote child relayed to its caller, and the answer stored for it (once its
/// producer accepted it).
#[derive(Debug, Clone, PartialEq)]
pub struct RelayedEntry {
    pub relayed: RelayedCall,
    pub answer: Option<StoredAnswer>,
}

impl Store {
    /// `address`'s session and, with `whole_tree` when `address` is the root, every session of
    /// its tree after it (in id order), as [`AwaitingSession`]s: one round trip for the tree's
    /// member list, one pipelined round trip for everything of every session (the tree's
    /// questions among it).
    pub async fn awaiting_sessions(
        &self,
        address: &SessionAddress,
        whole_tree: bool,
    ) -> Result<Vec<AwaitingSession>, Error> {
        let members = if whole_tree && address.is_root() {
            self.tree_sessions(address).await?
        } else {
            Vec::new()
        };
        self.awaiting_sessions_of(address, members).await
    }

    /// [`Self::awaiting_sessions`] of `address` and the sessions `members` of its tree (read by
    /// the caller: [`Self::tree_sessions`]; none for the session alone), in one round trip.
    pub(super) async fn awaiting_sessions_of(
        &self,
        address: &SessionAddress,
        members: Vec<String>,
    ) -> Result<Vec<AwaitingSession>, Error> {
        self.read_awaiting(address, true, members).await
    }

    /// [`Self::awaiting_sessions_of`] without `address`'s own session: the sessions `members`
    /// of its tree alone, for a caller that read `address`'s already.
    pub(super) async fn awaiting_members_of(
        &self,
        address: &SessionAddress,
        members: Vec<String>,
    ) -> Result<Vec<AwaitingSession>, Error> {
        self.read_awaiting(address, false, members).await
    }

    /// The sessions `members` of `address`'s tree, after `address`'s own with `with_own`, in
    /// one round trip with the tree's questions (kept on `address`, the root for a tree).
    async fn read_awaiting(
        &self,
        address: &SessionAddress,
        with_own: bool,
        members: Vec<String>,
    ) -> Result<Vec<AwaitingSession>, Error> {
        let mut sessions = if with_own {
            vec![address.clone()]
        } else {
            Vec::new()
        };
        sessions.extend(members.into_iter().map(|child| SessionAddress {
            root_session_id: address.root_session_id.clone(),
            session_id: child,
        }));
        let mut pipe = redis::pipe();
        self.add_awaiting_reads(&mut pipe, address, &sessions);
        let replies: Vec<redis::Value> = pipe.query_async(&mut self.conn()).await?;
        self.awaiting_of(address, sessions, replies)
    }

    /// A session's state, as [`Self::session`] reads it, and the calls waiting on a person in it
    /// alone or (`whole_tree`, for a root) in its whole tree, as [`Self::person_calls`] finds
    /// them: one round trip for a session with no sessions below it, a second for those below.
    pub async fn session_and_person_calls(
        &self,
        address: &SessionAddress,
        whole_tree: bool,
    ) -> Result<(Option<SessionState>, Vec<PersonCall>), Error> {
        let state_key = self.key(address, Key::State);
        let with_tree = whole_tree && address.is_root();
        let mut pipe = redis::pipe();
        pipe.hgetall(&state_key);
        if with_tree {
            pipe.smembers(self.key(address, Key::Tree));
        }
        let own = vec![address.clone()];
        self.add_awaiting_reads(&mut pipe, address, &own);
        let replies: Vec<redis::Value> = pipe.query_async(&mut self.conn()).await?;
        let mut replies = replies.into_iter();
        let fields: HashMap<String, String> = match replies.next() {
            Some(fields) => redis::from_redis_value(&fields)?,
            None => HashMap::new(),
        };
        let mut members: Vec<String> = match with_tree.then(|| replies.next()).flatten() {
            Some(members) => redis::from_redis_value(&members)?,
            None => Vec::new(),
        };
        members.sort();
        let replies: Vec<redis::Value> = replies.collect();
        let Some(session) = super::session::session_of(address, &state_key, &fields)? else {
            return Ok((None, Vec::new()));
        };
        let mut sessions = self.awaiting_of(address, own, replies)?;
        if !members.is_empty() {
            sessions.extend(self.awaiting_members_of(address, members).await?);
        }
        Ok((Some(session), person_calls_of(sessions)))
    }

    /// Adds to `pipe` the reads [`Self::awaiting_of`] parses: for each of `sessions`, its
    /// pending calls, answers, state fields and relayed calls; then the questions of `address`'s
    /// tree.
    fn add_awaiting_reads(
        &self,
        pipe: &mut redis::Pipeline,
        address: &SessionAddress,
        sessions: &[SessionAddress],
    ) {
        for session in sessions {
            pipe.hvals(self.key(session, Key::Pending))
                .hgetall(self.key(session, Key::Answers))
                .cmd("HMGET")
                .arg(self.key(session, Key::State))
                .arg(state_field::AGENT_TYPE)
                .arg(state_field::STATUS)
                .arg(state_field::META)
                .arg(state_field::RUN_ID)
                .hgetall(self.key(session, Key::Relayed));
        }
        pipe.hgetall(self.key(address, Key::Questions));
    }

    /// The [`AwaitingSession`]s of `sessions` from the replies of the reads
    /// [`Self::add_awaiting_reads`] added.
    fn awaiting_of(
        &self,
        address: &SessionAddress,
        sessions: Vec<SessionAddress>,
        mut replies: Vec<redis::Value>,
    ) -> Result<Vec<AwaitingSession>, Error> {
        let questions_key = self.key(address, Key::Questions);
        let questions = match replies.pop() {
            Some(questions) => {
                open_questions_of(&questions_key, &redis::from_redis_value(&questions)?)?
            }
            None => Vec::new(),
        };
        let mut read = Vec::with_capacity(sessions.len());
        for (session, replies) in sessions.into_iter().zip(replies.chunks(4)) {
            let [pending, answers, state, relayed] = replies else {
                continue;
            };
            let pending: Vec<String> = redis::from_redis_value(pending)?;
            let answers: HashMap<String, String> = redis::from_redis_value(answers)?;
            type StateFields = (
                Option<String>,
                Option<String>,
                Option<String>,
                Option<String>,
            );
            let (agent_type, status, meta, run_id): StateFields = redis::from_redis_value(state)?;
            let state_key = self.key(&session, Key::State);
            let user_id = meta
                .map(|text| from_json::<SessionMeta>(&state_key, &text))
                .transpose()?
                .and_then(|meta| meta.user_id);
            let status = status
                .map(|text| {
                    Status::from_str(&text).map_err(|_| Error::Corrupt {
                        key: state_key.clone(),
                        reason: format!("unknown status {text:?}"),
                    })
                })
                .transpose()?;
            let key = self.key(&session, Key::Pending);
            let mut pending: Vec<PendingCall> = pending
                .iter()
                .map(|text| from_json(&key, text))
                .collect::<Result<_, _>>()?;
            // The order the model asked in.
            pending.sort_by(|a, b| (a.step, &a.tool_call_id).cmp(&(b.step, &b.tool_call_id)));
            let key = self.key(&session, Key::Answers);
            let answers = answers
                .into_iter()
                .map(|(id, answer)| Ok((id, from_json(&key, &answer)?)))
                .collect::<Result<HashMap<String, StoredAnswer>, Error>>()?;
            // A remote child's relayed calls while the remote call awaits it (see `relay.rs`).
            let relayed: HashMap<String, String> = redis::from_redis_value(relayed)?;
            let awaiting: HashSet<&str> = pending
                .iter()
                .filter(|call| call.kind.is_sub_agent())
                .map(|call| call.tool_call_id.as_str())
                .filter(|id| !answers.contains_key(*id))
                .collect();
            let relayed_key = self.key(&session, Key::Relayed);
            let relayed = relayed_groups_of(&relayed_key, &relayed)?
                .into_iter()
                .filter(|group| awaiting.contains(group.via_call_id.as_str()))
                .flat_map(|group| group.calls)
                .map(|(relayed_call, answered)| {
                    let id = &relayed_call.call.tool_call_id;
                    let answer = match answered {
                        true => relayed_answer_of(&relayed_key, &relayed, id)?,
                        false => None,
                    };
                    Ok(RelayedEntry {
                        relayed: relayed_call,
                        answer,
                    })
                })
                .collect::<Result<_, Error>>()?;
            // A question is the running call's of the session's current run: one a lost run
            // left behind is not listed.
            let questions = questions
                .iter()
                .filter(|question| {
                    question.session_id == session.session_id
                        && status == Some(Status::Active)
                        && run_id.as_deref() == Some(question.run_id.as_str())
                })
                .cloned()
                .collect();
            read.push(AwaitingSession {
                address: session,
                agent_type,
                status,
                user_id,
                pending,
                answers,
                relayed,
                questions,
            });
        }
        Ok(read)
    }

    /// The calls waiting on a person in `address`'s session alone, or (`whole_tree`) in every
    /// session of its tree when `address` is the root: in session order, then call order.
    pub async fn person_calls(
        &self,
        address: &SessionAddress,
        whole_tree: bool,
    ) -> Result<Vec<PersonCall>, Error> {
        let sessions = self.awaiting_sessions(address, whole_tree).await?;
        Ok(person_calls_of(sessions))
    }
}

/// The calls waiting on a person in `sessions` (as [`Store::awaiting_sessions`] read them):
/// in session order, then call order.
pub(super) fn person_calls_of(sessions: Vec<AwaitingSession>) -> Vec<PersonCall> {
    let now = now_ms();
    let mut calls = Vec::new();
    for session in sessions {
        let AwaitingSession {
            address,
            agent_type,
            user_id,
            mut pending,
            answers,
            relayed,
            questions,
            ..
        } = session;
        pending.retain(|call| {
            matches!(call.kind, PendingKind::Client | PendingKind::Approval)
                && !answers.contains_key(&call.tool_call_id)
        });
        // A server tool's call that asked is rendered as a form of its question's schema.
        let mut waiting: Vec<(PendingCall, Option<serde_json::Value>)> = pending
            .into_iter()
            .map(|call| {
                let render = call
                    .asked
                    .as_ref()
                    .map(|ask| question_render(&ask.asked.schema));
                (call, render)
            })
            .collect();
        waiting.extend(
            relayed
                .into_iter()
                .filter(|entry| entry.answer.is_none())
                .map(|entry| (entry.relayed.call, entry.relayed.render)),
        );
        waiting.retain(|(call, _)| call.deadline_at > now);
        waiting.sort_by(|(a, _), (b, _)| (a.step, &a.tool_call_id).cmp(&(b.step, &b.tool_call_id)));
        let agent_type = agent_type.unwrap_or_default();
        calls.extend(waiting.into_iter().map(|(call, render)| PersonCall {
            owner: address.clone(),
            call,
            agent_type: agent_type.clone(),
            user_id: user_id.clone(),
            render,
        }));
        calls.extend(
            questions
                .into_iter()
                .map(|question| question_call(&address, question, &agent_type, user_id.as_ref())),
        );
    }
    calls
}

/// An open question as a person call of the session that asks (`crate::tool::ask`): a client
/// call named [`QUESTION_TOOL`] under the question's id, rendered as a form of its schema.
fn question_call(
    owner: &SessionAddress,
    question: Question,
    agent_type: &str,
    user_id: Option<&String>,
) -> PersonCall {
    let render = Some(question_render(&question.schema));
    PersonCall {
        owner: owner.clone(),
        call: question.as_pending(),
        agent_type: agent_type.to_owned(),
        user_id: user_id.cloned(),
        render,
    }
}

impl Question {
    /// The question as the pending call a person sees: a client call named [`QUESTION_TOOL`]
    /// under its id, whose input is what it asks, with the question as `asked` (the call that
    /// asks goes on by itself once answered: nothing continues it).
    pub fn as_pending(&self) -> PendingCall {
        PendingCall {
            tool_call_id: self.question_id.clone(),
            tool_name: QUESTION_TOOL.to_owned(),
            input: question_input(
                &self.message,
                &self.tool_name,
                &self.tool_call_id,
                self.deadline_at,
            ),
            kind: PendingKind::Client,
            step: self.step,
            deadline_at: self.deadline_at,
            completed_retention_ms: 0,
            approval_id: None,
            awaited_since: self.asked_at,
            asked: Some(PendingAsk {
                asked: Asked {
                    message: self.message.clone(),
                    schema: self.schema.clone(),
                    continuation: serde_json::Value::Null,
                    window_ms: None,
                },
                tool_call_id: self.tool_call_id.clone(),
                tool_name: self.tool_name.clone(),
                arguments: serde_json::Value::Null,
            }),
        }
    }
}

//! The questions running tool calls ask a person (see `crate::tool::ask`): asked with their
//! chunk (`ask_question.lua`), answered through the root (`answer_question.lua`), read by the
//! asking call, and closed by it (`close_question.lua`). They live in the root's `questions`
//! hash, so a submit naming the root finds a question of any session of the tree.

use super::{
    Error, SessionAddress, StepRef, Store, Written,
    keys::Key,
    now_ms,
    replies::{Reply, WriteReply},
    scripts::{ANSWER_QUESTION, ASK_QUESTION, CLOSE_QUESTION},
};
use crate::tool::ask::PersonAnswer;
use baton_wire::chunk::{ChunkKind, encode_unsequenced};
use redis::{AsyncCommands, FromRedisValue, RedisResult, Value as RedisValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The field of a question's answer in the questions hash: this and the question's id.
const ANSWER_FIELD: &str = "answer:";

/// How long the questions hash outlives the latest deadline it holds.
const KEEP_PAST_DEADLINE_MS: u64 = 60_000;

/// A question as stored: who asks (session, run, step, call), what, and until when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    pub question_id: String,
    /// The session whose call asks.
    pub session_id: String,
    pub run_id: String,
    pub step: u32,
    pub tool_call_id: String,
    pub tool_name: String,
    pub message: String,
    pub schema: Value,
    pub asked_at: u64,
    /// Ms since the epoch.
    pub deadline_at: u64,
}

/// What became of an answer to a question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuestionAnswered {
    /// Stored: the asking call of run `run_id` reads it.
    Stored { run_id: String },
    /// An answer was stored before this one.
    AlreadyAnswered,
    /// No open question has this id (never asked, closed, or its run moved on).
    Unknown,
    /// Its deadline has passed.
    Expired,
}

impl FromRedisValue for QuestionAnswered {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(match reply.tag.as_str() {
            "ok" => Self::Stored {
                run_id: reply.value(0)?,
            },
            "answered" => Self::AlreadyAnswered,
            "expired" => Self::Expired,
            _ => Self::Unknown,
        })
    }
}

/// How the asking call closed its question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closing {
    /// Its deadline passed.
    TimedOut,
    /// Its call ended (or gave up) first.
    Withdrawn,
}

impl Store {
    /// Asks `question` for a call of `step` (its chunk on the stream): [`Written::AlreadyDone`]
    /// when that id was asked already.
    pub async fn ask_question(
        &self,
        step: StepRef<'_>,
        question: &Question,
    ) -> Result<Written, Error> {
        let chunk = ChunkKind::Question {
            step: step.step,
            question_id: question.question_id.clone(),
            tool_call_id: question.tool_call_id.clone(),
            tool_name: question.tool_name.clone(),
            message: question.message.clone(),
            schema: question.schema.clone(),
            deadline_at: question.deadline_at,
        };
        let keep = question.deadline_at.saturating_sub(now_ms()) + KEEP_PAST_DEADLINE_MS;
        // The tree's `awaiting` term follows the question.
        let mark = self.mark_for_index(step.address).await?;
        let reply: WriteReply = ASK_QUESTION
            .on(self, step.address)
            .arg(step.run_id)
            .arg(step.step)
            .arg(&question.question_id)
            .arg(encode(question)?)
            .arg(encode_unsequenced(&self.header(step.run()), &chunk))
            .arg(keep)
            .run(self)
            .await?;
        self.reindex_after_change(step.address, mark).await;
        self.step_written(step, reply)
    }

    /// The open question `question_id` of the tree whose root is `root`, if any.
    pub async fn question(
        &self,
        root: &SessionAddress,
        question_id: &str,
    ) -> Result<Option<Question>, Error> {
        let key = self.key(root, Key::Questions);
        let record: Option<String> = self.conn().hget(&key, question_id).await?;
        record.map(|r| decode(&key, &r)).transpose()
    }

    /// Stores a person's answer to `question` (read with [`Self::question`]) while it is open.
    pub async fn answer_question(
        &self,
        question: &Question,
        answer: &PersonAnswer,
    ) -> Result<QuestionAnswered, Error> {
        let owner = self.question_owner(question);
        ANSWER_QUESTION
            .on(self, &owner)
            .arg(&question.question_id)
            .arg(encode(answer)?)
            .arg(now_ms())
            .run(self)
            .await
    }

    /// The answer stored for `question_id`, if one is (the asking call's poll).
    pub async fn question_answer(
        &self,
        address: &SessionAddress,
        question_id: &str,
    ) -> Result<Option<PersonAnswer>, Error> {
        let key = self.key(address, Key::Questions);
        let field = format!("{ANSWER_FIELD}{question_id}");
        let answer: Option<String> = self.conn().hget(&key, field).await?;
        answer.map(|a| decode(&key, &a)).transpose()
    }

    /// Closes the question `question_id` of a call of `step`, with its `question_closed` chunk:
    /// the answer stored before the close, if any (its chunk names the answer's action, else
    /// `closing`'s).
    pub async fn close_question(
        &self,
        step: StepRef<'_>,
        question_id: &str,
        closing: Closing,
    ) -> Result<Option<PersonAnswer>, Error> {
        let header = self.header(step.run());
        let body = |answer: &str| {
            encode_unsequenced(
                &header,
                &ChunkKind::QuestionClosed {
                    step: step.step,
                    question_id: question_id.to_owned(),
                    answer: answer.to_owned(),
                },
            )
        };
        let unanswered = match closing {
            Closing::TimedOut => "timed_out",
            Closing::Withdrawn => "withdrawn",
        };
        let mark = self.mark_for_index(step.address).await?;
        let reply: Closed = CLOSE_QUESTION
            .on(self, step.address)
            .arg(step.run_id)
            .arg(question_id)
            .arg(body(unanswered))
            .arg(body("accept"))
            .arg(body("decline"))
            .arg(body("cancel"))
            .run(self)
            .await?;
        self.reindex_after_change(step.address, mark).await;
        match reply.0 {
            Some(answer) if !answer.is_empty() => Ok(Some(decode(
                &self.key(step.address, Key::Questions),
                &answer,
            )?)),
            _ => Ok(None),
        }
    }

    fn question_owner(&self, question: &Question) -> SessionAddress {
        let root = baton_wire::ids::root_of(&question.session_id);
        SessionAddress {
            root_session_id: root.to_owned(),
            session_id: question.session_id.clone(),
        }
    }
}

/// `close_question.lua`'s answer: the stored answer's JSON (empty: none) when it closed the
/// question, `None` when the question was gone.
struct Closed(Option<String>);

impl FromRedisValue for Closed {
    fn from_redis_value(value: &RedisValue) -> RedisResult<Self> {
        let reply = Reply::parse(value)?;
        Ok(Self(match reply.tag.as_str() {
            "ok" => Some(reply.value(0)?),
            _ => None,
        }))
    }
}

fn encode(value: &impl Serialize) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|error| Error::Corrupt {
        key: "a question".to_owned(),
        reason: error.to_string(),
    })
}

fn decode<T: for<'de> Deserialize<'de>>(key: &str, text: &str) -> Result<T, Error> {
    serde_json::from_str(text).map_err(|error| Error::Corrupt {
        key: key.to_owned(),
        reason: error.to_string(),
    })
}

/// The questions of a tree's questions hash (`key`, read whole) still open: asked, neither
/// answered nor closed, before their deadline; oldest first.
pub(super) fn open_questions_of(
    key: &str,
    fields: &std::collections::HashMap<String, String>,
) -> Result<Vec<Question>, Error> {
    let now = now_ms();
    let mut open = Vec::new();
    for (field, record) in fields {
        if field.starts_with(ANSWER_FIELD) {
            continue;
        }
        let question: Question = decode(key, record)?;
        let answered = fields.contains_key(&format!("{ANSWER_FIELD}{field}"));
        if !answered && question.deadline_at > now {
            open.push(question);
        }
    }
    open.sort_by(|a, b| (a.asked_at, &a.question_id).cmp(&(b.asked_at, &b.question_id)));
    Ok(open)
}

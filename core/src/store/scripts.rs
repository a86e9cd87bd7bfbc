//! The Lua scripts, each with the keys it declares. A script's invocation takes exactly those
//! keys, in that order, so no caller can pass a different set (a test holds each declaration to
//! the script's text).

use super::{Error, SessionAddress, Store, keys::Key};
use redis::{ErrorKind, FromRedisValue, ToRedisArgs, Value as RedisValue};
use std::sync::LazyLock;

/// One Lua script (prefixed with `prelude.lua`) and the keys it declares.
pub(super) struct StoreScript {
    /// The file name without `.lua`, for errors and tests.
    pub(super) name: &'static str,
    /// The script's own text, without the prelude.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) source: &'static str,
    /// `KEYS[1]`, `KEYS[2]`, … in order: always the state and the stream first (the prelude's);
    /// every invocation adds the root's state and stream after them.
    pub(super) keys: &'static [Key],
    script: LazyLock<redis::Script>,
}

macro_rules! store_script {
    // A script that runs two others' bodies, each a function of its own KEYS and ARGV (named
    // `<name>_script`), as `$name.lua` calls them.
    ($name:literal, [$($key:ident),+ $(,)?], runs $first:literal, $second:literal) => {
        StoreScript {
            name: $name,
            source: include_str!(concat!($name, ".lua")),
            keys: &[$(Key::$key),+],
            script: LazyLock::new(|| {
                redis::Script::new(concat!(
                    include_str!("prelude.lua"),
                    "\nlocal function ",
                    $first,
                    "_script(KEYS, ARGV)\n",
                    include_str!(concat!($first, ".lua")),
                    "\nend\nlocal function ",
                    $second,
                    "_script(KEYS, ARGV)\n",
                    include_str!(concat!($second, ".lua")),
                    "\nend\n",
                    include_str!(concat!($name, ".lua"))
                ))
            }),
        }
    };
    ($name:literal, [$($key:ident),+ $(,)?]) => {
        store_script!($name, &[$(Key::$key),+])
    };
    ($name:literal, $keys:expr) => {
        StoreScript {
            name: $name,
            source: include_str!(concat!($name, ".lua")),
            keys: $keys,
            script: LazyLock::new(|| {
                redis::Script::new(concat!(
                    include_str!("prelude.lua"),
                    "\n",
                    include_str!(concat!($name, ".lua"))
                ))
            }),
        }
    };
}

pub(super) static CREATE_SESSION: StoreScript =
    store_script!("create_session", [State, Stream, Messages, Checkpoints]);
pub(super) static EMIT_MODEL_CHUNKS: StoreScript =
    store_script!("emit_model_chunks", [State, Stream, Staged]);
pub(super) static STAGE_TURN: StoreScript =
    store_script!("stage_turn", [State, Stream, Staged, CallIds]);
pub(super) static STAGE_TOOL_RESULT: StoreScript =
    store_script!("stage_tool_result", [State, Stream, Staged]);
pub(super) static RELEASE_CLAIM: StoreScript = store_script!("release_claim", [State, Stream]);
pub(super) static MARK_TOOL_STARTED: StoreScript =
    store_script!("mark_tool_started", [State, Stream, Staged]);
pub(super) static STAGE_TOOL_ASKS: StoreScript =
    store_script!("stage_tool_asks", [State, Stream, Staged]);
pub(super) static STAGE_STATE_PATCH: StoreScript =
    store_script!("stage_state_patch", [State, Stream, Staged]);
/// The keys of the two scripts that end a run by a step or a failure: the step's, and those its
/// end gives the retention (see `session_keys` in the prelude).
const ENDING_RUN_KEYS: &[Key] = &[
    Key::State,
    Key::Stream,
    Key::Staged,
    Key::Messages,
    Key::Checkpoints,
    Key::Usage,
    Key::Children,
    Key::Tree,
    Key::Ownership,
    Key::Completed,
    Key::CallIds,
];
pub(super) static COMMIT_STEP: StoreScript = store_script!("commit_step", ENDING_RUN_KEYS);
pub(super) static FAIL_RUN: StoreScript = store_script!("fail_run", ENDING_RUN_KEYS);
pub(super) static COMMIT_SUSPENDED_STEP: StoreScript = store_script!(
    "commit_suspended_step",
    [
        State,
        Stream,
        Staged,
        Messages,
        Checkpoints,
        Usage,
        Pending,
        Ownership,
        OpenDeadlines,
    ]
);
pub(super) static STAGE_AND_SUSPEND: StoreScript = store_script!(
    "stage_and_suspend",
    [
        State,
        Stream,
        Staged,
        CallIds,
        Messages,
        Checkpoints,
        Usage,
        Pending,
        Ownership,
        OpenDeadlines,
    ],
    runs "stage_turn", "commit_suspended_step"
);
pub(super) static SUBMIT_ANSWER: StoreScript = store_script!(
    "submit_answer",
    [
        State,
        Stream,
        Pending,
        Answers,
        Ownership,
        Completed,
        OpenDeadlines,
        SubmitBucket,
        Tree,
    ]
);
pub(super) static TAKE_SUBMIT_TOKEN: StoreScript =
    store_script!("take_submit_token", [State, Stream, SubmitBucket]);
pub(super) static TAKE_SUBJECT_TOKEN: StoreScript =
    store_script!("take_subject_token", [State, Stream, SubjectBucket]);
pub(super) static CLAIM_RESUME: StoreScript = store_script!(
    "claim_resume",
    [
        State,
        Stream,
        Pending,
        OpenDeadlines,
        Messages,
        Checkpoints,
        Usage,
        Children,
        Tree,
        Ownership,
        Completed,
        CallIds,
    ]
);
pub(super) static APPLY_ANSWERS: StoreScript = store_script!(
    "apply_answers",
    [
        State,
        Stream,
        Messages,
        Pending,
        PendingRun,
        Answers,
        Ownership,
        Completed,
        OpenDeadlines,
        Staged,
    ]
);
pub(super) static STOP_RUN: StoreScript = store_script!(
    "stop_run",
    [
        State,
        Stream,
        Messages,
        Staged,
        Pending,
        PendingRun,
        Answers,
        Ownership,
        OpenDeadlines,
        Checkpoints,
        Usage,
        Children,
        Tree,
        Completed,
        CallIds,
        Relayed,
    ]
);
pub(super) static REWIND: StoreScript = store_script!(
    "rewind",
    [
        State,
        Stream,
        Messages,
        Checkpoints,
        Pending,
        PendingRun,
        Answers,
        OpenDeadlines,
        Ownership,
        Completed,
        Usage,
        Children,
        Tree,
        CallIds,
    ]
);
pub(super) static FORWARD_REMOTE: StoreScript =
    store_script!("forward_remote", [State, Stream, Pending, Answers]);
pub(super) static REMOTE_CALLBACK_TOKEN: StoreScript =
    store_script!("remote_callback_token", [State, Stream]);
pub(super) static ACCEPT_REMOTE_CALLBACK: StoreScript =
    store_script!("accept_remote_callback", [State, Stream]);
pub(super) static ASK_QUESTION: StoreScript =
    store_script!("ask_question", [State, Stream, Questions]);
pub(super) static ANSWER_QUESTION: StoreScript =
    store_script!("answer_question", [State, Stream, Questions]);
pub(super) static CLOSE_QUESTION: StoreScript =
    store_script!("close_question", [State, Stream, Questions]);
pub(super) static RELAY_REMOTE_CALLS: StoreScript = store_script!(
    "relay_remote_calls",
    [State, Stream, Pending, Answers, Relayed, Ownership]
);
pub(super) static STORE_RELAYED_ANSWER: StoreScript = store_script!(
    "store_relayed_answer",
    [State, Stream, Pending, Answers, Relayed]
);
pub(super) static ANSWER_REMOTE_CALL: StoreScript = store_script!(
    "answer_remote_call",
    [
        State,
        Stream,
        Pending,
        Answers,
        OpenDeadlines,
        Relayed,
        Ownership
    ]
);
pub(super) static MARK_REMOTE_ORPHAN: StoreScript =
    store_script!("mark_remote_orphan", [State, Stream]);
pub(super) static SNAPSHOT: StoreScript =
    store_script!("snapshot", [State, Stream, Messages, Checkpoints]);
pub(super) static START_CHILD: StoreScript = store_script!(
    "start_child",
    [
        State,
        Stream,
        Messages,
        Checkpoints,
        Tree,
        ParentState,
        ParentStream,
        ParentChildren,
    ]
);
pub(super) static REPORT_TO_PARENT: StoreScript = store_script!(
    "report_to_parent",
    [
        State,
        Stream,
        ParentState,
        ParentStream,
        ParentPending,
        ParentAnswers,
        ParentOpenDeadlines,
    ]
);

pub(super) static QUEUE_MESSAGE: StoreScript = store_script!("queue_message", [State, Stream]);
pub(super) static CREATE_FORK: StoreScript =
    store_script!("create_fork", [State, Stream, Messages, Checkpoints]);
pub(super) static REGISTER_CALLBACK: StoreScript =
    store_script!("register_callback", [State, Stream]);
pub(super) static CALLBACK_DELIVERED: StoreScript =
    store_script!("callback_delivered", [State, Stream]);
pub(super) static CALLBACK_FAILED: StoreScript = store_script!("callback_failed", [State, Stream]);
pub(super) static RECORD_A2A: StoreScript = store_script!("record_a2a", [State, Stream]);
pub(super) static A2A_CHILD: StoreScript =
    store_script!("a2a_child", [State, Stream, Pending, Answers]);

/// Every script: for the tests that read their text, and to name a recorded round trip's.
static ALL: [&StoreScript; 39] = [
    &CREATE_FORK,
    &RECORD_A2A,
    &A2A_CHILD,
    &REGISTER_CALLBACK,
    &CALLBACK_DELIVERED,
    &CALLBACK_FAILED,
    &STAGE_STATE_PATCH,
    &QUEUE_MESSAGE,
    &START_CHILD,
    &REPORT_TO_PARENT,
    &CREATE_SESSION,
    &RELEASE_CLAIM,
    &MARK_TOOL_STARTED,
    &STAGE_TOOL_ASKS,
    &EMIT_MODEL_CHUNKS,
    &STAGE_TURN,
    &STAGE_TOOL_RESULT,
    &COMMIT_STEP,
    &FAIL_RUN,
    &COMMIT_SUSPENDED_STEP,
    &STAGE_AND_SUSPEND,
    &SUBMIT_ANSWER,
    &TAKE_SUBMIT_TOKEN,
    &TAKE_SUBJECT_TOKEN,
    &CLAIM_RESUME,
    &APPLY_ANSWERS,
    &STOP_RUN,
    &REWIND,
    &SNAPSHOT,
    &FORWARD_REMOTE,
    &RELAY_REMOTE_CALLS,
    &ASK_QUESTION,
    &ANSWER_QUESTION,
    &CLOSE_QUESTION,
    &STORE_RELAYED_ANSWER,
    &ANSWER_REMOTE_CALL,
    &REMOTE_CALLBACK_TOKEN,
    &ACCEPT_REMOTE_CALLBACK,
    &MARK_REMOTE_ORPHAN,
];

/// The name of the store's script whose `EVALSHA` hash is `hash` (a state transition's, or
/// one of the search index's), if it is one of them.
pub(super) fn name_of_hash(hash: &str) -> Option<&'static str> {
    ALL.iter()
        .find(|script| script.script.get_hash() == hash)
        .map(|script| script.name)
        .or_else(|| super::search_index::index_script_name(hash))
        .or_else(|| super::delete::delete_script_name(hash))
}

impl StoreScript {
    /// An invocation of the script on `address`'s keys (each root key on its root); the caller
    /// adds the arguments.
    pub(super) fn on(&self, store: &Store, address: &SessionAddress) -> Invocation<'_> {
        self.on_child(store, address, address)
    }

    /// An invocation of a script spanning a child and its parent: the parent's keys (see
    /// [`Key::on_parent`]) are `parent`'s, the others the child's.
    pub(super) fn on_child(
        &self,
        store: &Store,
        child: &SessionAddress,
        parent: &SessionAddress,
    ) -> Invocation<'_> {
        self.invocation(store, child, parent, &[])
    }

    /// An invocation on `address`'s keys that also passes `more_keys` (keys of other sessions
    /// of the same tree, so of the same slot) after the declared ones, for a script that reads
    /// across its tree (it says how it takes them).
    pub(super) fn on_with_keys(
        &self,
        store: &Store,
        address: &SessionAddress,
        more_keys: &[String],
    ) -> Invocation<'_> {
        self.invocation(store, address, address, more_keys)
    }

    fn invocation(
        &self,
        store: &Store,
        child: &SessionAddress,
        parent: &SessionAddress,
        more_keys: &[String],
    ) -> Invocation<'_> {
        let script: &redis::Script = &self.script;
        let mut command = redis::cmd("EVALSHA");
        // The declared keys, any more, then the prelude's last two: the tree root's state and
        // stream (see `emit_on`).
        command
            .arg(script.get_hash())
            .arg(self.keys.len() + more_keys.len() + 2);
        for key in self.keys {
            let address = if key.on_parent() { parent } else { child };
            command.arg(store.key(address, *key));
        }
        command.arg(more_keys);
        let root = SessionAddress::root(&child.root_session_id);
        command.arg(store.key(&root, Key::State));
        command.arg(store.key(&root, Key::Stream));
        Invocation {
            name: self.name,
            script,
            command,
        }
    }
}

/// A script with its keys, taking arguments: an `EVALSHA` command, and the script to load when
/// Redis does not know it (a restarted or flushed Redis).
pub(super) struct Invocation<'a> {
    name: &'static str,
    script: &'a redis::Script,
    command: redis::Cmd,
}

/// How many times a request refused for want of a script is sent again, the script loaded: a
/// Redis that forgets its scripts again between the load and the resend (a failover, a flush) is
/// answered by loading once more, and one that keeps forgetting them by its error.
const RELOADS: u32 = 3;

/// Whether `error` is Redis refusing a script it does not know and a reload is left: counts it.
fn refused_for_script(error: &redis::RedisError, reloads: &mut u32) -> bool {
    if error.kind() != ErrorKind::NoScriptError || *reloads == RELOADS {
        return false;
    }
    *reloads += 1;
    true
}

impl Invocation<'_> {
    pub(super) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.command.arg(arg);
        self
    }

    /// Runs the script and decodes its reply.
    pub(super) async fn run<T: FromRedisValue>(&self, store: &Store) -> Result<T, Error> {
        let mut connection = store.conn();
        let mut reloads = 0;
        let reply: RedisValue = loop {
            match self.command.query_async(&mut connection).await {
                Err(error) if refused_for_script(&error, &mut reloads) => {
                    self.script.load_async(&mut connection).await?;
                }
                reply => break reply?,
            }
        };
        self.decode(reply)
    }

    /// Runs the script, then `then`'s, in one round trip (a pipeline: Redis runs them in that
    /// order), and decodes both replies. Each is its own state transition, fenced on its own, so
    /// the second finds what the first wrote or refuses as it would alone. If Redis does not
    /// know one of them, both are loaded and the pair is sent again: every script can be run
    /// twice (a write already applied answers that it was done).
    pub(super) async fn run_then<A: FromRedisValue, B: FromRedisValue>(
        &self,
        then: &Invocation<'_>,
        store: &Store,
    ) -> Result<(A, B), Error> {
        self.run_then_after(then, None, store).await
    }

    /// [`Self::run_then`], then `after` if given, a plain write that must come after both
    /// (Redis runs the three in that order), in the same round trip; `after`'s reply is not
    /// read. If Redis does not know a script, all three are sent again, so `after` must be
    /// idempotent, and it is sent whatever the scripts answer.
    pub(super) async fn run_then_after<A: FromRedisValue, B: FromRedisValue>(
        &self,
        then: &Invocation<'_>,
        after: Option<redis::Cmd>,
        store: &Store,
    ) -> Result<(A, B), Error> {
        let mut pipeline = redis::pipe();
        pipeline
            .add_command(self.command.clone())
            .add_command(then.command.clone());
        if let Some(after) = after {
            pipeline.add_command(after).ignore();
        }
        let (first, second) = self.send_pair(&pipeline, Some(then), store).await?;
        Ok((self.decode(first)?, then.decode(second)?))
    }

    /// A plain read of the same slot, then the script, in one round trip (a pipeline: Redis runs
    /// them in that order), and decodes both replies. If Redis does not know the script, it is
    /// loaded and the pair is sent again (the read changes nothing).
    pub(super) async fn run_after<R: FromRedisValue, T: FromRedisValue>(
        &self,
        read: redis::Cmd,
        store: &Store,
    ) -> Result<(R, T), Error> {
        let mut pipeline = redis::pipe();
        pipeline.add_command(read).add_command(self.command.clone());
        let (read, reply) = self.send_pair(&pipeline, None, store).await?;
        Ok((redis::from_owned_redis_value(read)?, self.decode(reply)?))
    }

    /// The script, then a plain read of the same slot, in one round trip (a pipeline: Redis runs
    /// them in that order, so the read sees what the script wrote), and decodes both replies. If
    /// Redis does not know the script, it is loaded and the pair is sent again (a script can be
    /// run twice, and the read changes nothing).
    pub(super) async fn run_before<T: FromRedisValue, R: FromRedisValue>(
        &self,
        read: redis::Cmd,
        store: &Store,
    ) -> Result<(T, R), Error> {
        let mut pipeline = redis::pipe();
        pipeline.add_command(self.command.clone()).add_command(read);
        let (reply, read) = self.send_pair(&pipeline, None, store).await?;
        Ok((self.decode(reply)?, redis::from_owned_redis_value(read)?))
    }

    /// Sends `pipeline`, this script and one more command (and any whose replies it ignores),
    /// and answers the two raw replies. If Redis does not know a script, this one and `also`
    /// are loaded and the pipeline sent again.
    async fn send_pair(
        &self,
        pipeline: &redis::Pipeline,
        also: Option<&Invocation<'_>>,
        store: &Store,
    ) -> Result<(RedisValue, RedisValue), Error> {
        let mut connection = store.conn();
        let mut reloads = 0;
        loop {
            match pipeline.query_async(&mut connection).await {
                Err(error) if refused_for_script(&error, &mut reloads) => {
                    self.script.load_async(&mut connection).await?;
                    if let Some(also) = also {
                        also.script.load_async(&mut connection).await?;
                    }
                }
                replies => return Ok(replies?),
            }
        }
    }

    /// An invocation of a script that is not a state transition (no prelude, no session keys:
    /// the search index's), on `keys`.
    pub(super) fn plain<'a>(
        name: &'static str,
        script: &'a redis::Script,
        keys: &[&str],
    ) -> Invocation<'a> {
        let mut command = redis::cmd("EVALSHA");
        command.arg(script.get_hash()).arg(keys.len()).arg(keys);
        Invocation {
            name,
            script,
            command,
        }
    }

    /// Decodes a reply. A reply the script never gives is corrupt data (not Redis trouble, which
    /// is worth retrying).
    fn decode<T: FromRedisValue>(&self, reply: RedisValue) -> Result<T, Error> {
        T::from_owned_redis_value(reply).map_err(|error| Error::Corrupt {
            key: self.name.to_owned(),
            reason: error.detail().unwrap_or("unexpected reply").to_owned(),
        })
    }
}

#[cfg(test)]
impl StoreScript {
    /// Loads the script into Redis's cache, as its first `EVALSHA` refused would.
    pub(super) async fn load(&self, store: &Store) {
        self.script
            .load_async(&mut store.conn())
            .await
            .expect("the script loads");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Status;
    use strum::IntoEnumIterator;

    const PRELUDE: &str = include_str!("prelude.lua");

    /// The Lua local that names `key`: `pendingRun` is `pending_run_key`, the parent's state
    /// `parent_state_key`.
    fn lua_name(key: Key) -> String {
        let mut name = String::from(if key.on_parent() { "parent_" } else { "" });
        for c in key.name().chars() {
            if c.is_ascii_uppercase() {
                name.push('_');
            }
            name.push(c.to_ascii_lowercase());
        }
        name + "_key"
    }

    /// The `local <name> = …<table>[<n>]…` lines of `text` as (n, name), in order; every other
    /// mention of `<table>[<digits>]` fails the test, so each fixed key and argument is named once
    /// at the top.
    fn named(text: &str, table: &str, script: &str) -> Vec<(usize, String)> {
        let mut names = Vec::new();
        for line in text.lines() {
            let code = line.split("--").next().unwrap_or_default().trim();
            let open = format!("{table}[");
            let Some(start) = code.find(&open) else {
                continue;
            };
            let fixed = code[start + open.len()..].starts_with(|c: char| c.is_ascii_digit());
            if !fixed {
                continue;
            }
            // The value may convert the argument (`tonumber(ARGV[3])`, `ARGV[5] == '1'`).
            let declaration = code
                .strip_prefix("local ")
                .and_then(|rest| rest.split_once(" = "))
                .filter(|(_, value)| value.matches(&open).count() == 1)
                .and_then(|(name, value)| {
                    let (_, after) = value.split_once(&open)?;
                    let (index, _) = after.split_once(']')?;
                    Some((index.parse().ok()?, name.to_owned()))
                });
            match declaration {
                Some(declaration) => names.push(declaration),
                None => panic!("{script}: {table} used outside a named local: {line}"),
            }
        }
        names
    }

    #[test]
    fn each_script_names_exactly_the_keys_its_invocation_passes() {
        for script in ALL {
            let mut keys = named(PRELUDE, "KEYS", "prelude");
            keys.extend(named(script.source, "KEYS", script.name));
            let declared: Vec<(usize, String)> = script
                .keys
                .iter()
                .enumerate()
                .map(|(index, key)| (index + 1, lua_name(*key)))
                .collect();
            assert_eq!(keys, declared, "{}", script.name);
        }
    }

    #[test]
    fn each_script_names_its_fixed_arguments_in_order_before_the_repeated_ones() {
        assert!(named(PRELUDE, "ARGV", "prelude").is_empty());
        for script in ALL {
            let arguments = named(script.source, "ARGV", script.name);
            let indices: Vec<usize> = arguments.iter().map(|(index, _)| *index).collect();
            let in_order: Vec<usize> = (1..=arguments.len()).collect();
            assert_eq!(indices, in_order, "{}", script.name);
            // A script taking repeated arguments says where they start: after the named ones.
            for line in script.source.lines() {
                if let Some(first) = line
                    .strip_prefix("local first_")
                    .and_then(|rest| rest.split_once(" = "))
                {
                    let index = first.1.split_whitespace().next().unwrap_or_default();
                    assert_eq!(index, (arguments.len() + 1).to_string(), "{}", script.name);
                }
            }
        }
    }

    #[test]
    fn the_prelude_calls_ended_what_the_rust_side_calls_terminal() {
        let ended = PRELUDE
            .lines()
            .find(|line| line.starts_with("local ended_statuses = {"))
            .expect("the prelude names the ended statuses");
        for status in Status::iter() {
            let listed = ended.contains(&format!(" {} = true", status.as_str()));
            assert_eq!(listed, status.is_terminal(), "{status:?}");
        }
    }
}

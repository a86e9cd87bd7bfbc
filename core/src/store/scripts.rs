//! The Lua scripts, each with the keys it declares. A script's invocation takes exactly those
//! keys, in that order, so no caller can pass a different set (a test holds each declaration to
//! the script's text).

use super::{Error, SessionAddress, Store, keys::Key};
use redis::{FromRedisValue, ScriptInvocation, ToRedisArgs, Value as RedisValue};
use std::sync::LazyLock;

/// One Lua script (prefixed with `prelude.lua`) and the keys it declares.
pub(super) struct StoreScript {
    /// The file name without `.lua`, for errors and tests.
    pub(super) name: &'static str,
    /// `KEYS[1]`, `KEYS[2]`, … in order.
    pub(super) keys: &'static [Key],
    script: LazyLock<redis::Script>,
}

macro_rules! store_script {
    ($name:literal, [$($key:ident),+ $(,)?]) => {
        StoreScript {
            name: $name,
            keys: &[$(Key::$key),+],
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
pub(super) static STAGE_TURN: StoreScript = store_script!("stage_turn", [State, Stream, Staged]);
pub(super) static STAGE_TOOL_RESULT: StoreScript =
    store_script!("stage_tool_result", [State, Stream, Staged]);
pub(super) static COMMIT_STEP: StoreScript = store_script!(
    "commit_step",
    [State, Stream, Staged, Messages, Checkpoints, Usage]
);
pub(super) static FAIL_RUN: StoreScript = store_script!("fail_run", [State, Stream, Staged]);
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
        PendingRun,
        Ownership,
        OpenDeadlines,
    ]
);
pub(super) static SUBMIT_ANSWER: StoreScript = store_script!(
    "submit_answer",
    [
        State,
        Stream,
        Pending,
        PendingRun,
        Answers,
        Ownership,
        Completed,
        OpenDeadlines,
    ]
);
pub(super) static CLAIM_RESUME: StoreScript = store_script!(
    "claim_resume",
    [State, Stream, Pending, PendingRun, Answers, OpenDeadlines]
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
    ]
);
pub(super) static STOP_RUN: StoreScript = store_script!("stop_run", [State, Stream]);
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
    ]
);
pub(super) static TAKE_TOKEN: StoreScript = store_script!("take_token", [State, SubmitBucket]);
pub(super) static SNAPSHOT: StoreScript =
    store_script!("snapshot", [State, Stream, Messages, Checkpoints]);

impl StoreScript {
    /// An invocation of the script on `address`'s keys (each root key on its root); the caller
    /// adds the arguments.
    pub(super) fn on(&self, store: &Store, address: &SessionAddress) -> Invocation<'_> {
        let mut inner = self.script.prepare_invoke();
        for key in self.keys {
            inner.key(store.key(address, *key));
        }
        Invocation {
            name: self.name,
            inner,
        }
    }
}

/// A script with its keys, taking arguments.
pub(super) struct Invocation<'a> {
    name: &'static str,
    inner: ScriptInvocation<'a>,
}

impl Invocation<'_> {
    pub(super) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.inner.arg(arg);
        self
    }

    /// Runs the script and decodes its reply. A reply the script never gives is corrupt data
    /// (not Redis trouble, which is worth retrying).
    pub(super) async fn run<T: FromRedisValue>(&self, store: &Store) -> Result<T, Error> {
        let reply: RedisValue = self.inner.invoke_async(&mut store.conn()).await?;
        T::from_owned_redis_value(reply).map_err(|error| Error::Corrupt {
            key: self.name.to_owned(),
            reason: error.detail().unwrap_or("unexpected reply").to_owned(),
        })
    }
}

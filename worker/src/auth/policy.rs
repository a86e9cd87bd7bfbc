//! What each principal may do: which surface it reaches (the API or the producer mount), which
//! sessions it acts on, what it starts and what it sees in a search. The operations
//! (`crate::ops`) call these once each; no adapter decides any of it.

use super::{Principal, mismatch};
use baton_core::{
    ApiError, ErrorCode, Store, ids,
    store::{SessionAddress, SessionState},
};

/// Where a request arrives: the API (JSON routes, chat, console, gRPC) or the producer mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    Api,
    Mount,
}

/// Which sessions a caller may see in a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchScope {
    /// An operator: every session.
    All,
    /// A session token: its own tree only.
    Tree { root_session_id: String },
    /// An end user (a token whose subject is a `userId`): only the sessions for that user that
    /// no service owns.
    User { user_id: String },
}

impl SearchScope {
    /// Whether a root session is inside the scope (a tree's sessions are the root's).
    pub fn holds(&self, root: &SessionState) -> bool {
        match self {
            Self::All => true,
            Self::Tree { root_session_id } => *root_session_id == root.session_id,
            Self::User { user_id } => user_owns(user_id, root),
        }
    }
}

/// Whether `root` is a session of the end user `user_id`: its `userId` is theirs and no service
/// started it (a remote child carries its caller's `userId`, but it is the calling service's).
fn user_owns(user_id: &str, root: &SessionState) -> bool {
    root.owner.is_none() && root.meta.user_id.as_deref() == Some(user_id)
}

fn forbidden(message: &str) -> ApiError {
    ApiError::new(ErrorCode::Forbidden, message)
}

impl Principal {
    /// Refuses a principal on a surface it does not reach: a service key anywhere but the
    /// producer mount (403 `forbidden`), a user token on the mount (403: an end user acts
    /// through the API, never as a service), and on an open server (`open`) a caller of the
    /// mount without a service key (401: an open API still authenticates the services that run
    /// its agents). A session token reaches its own tree on either.
    pub fn may_reach(&self, surface: Surface, open: bool) -> Result<(), ApiError> {
        match (surface, self) {
            (Surface::Api, Self::Service { .. }) => Err(forbidden(
                "a service key acts only on the producer mount's routes",
            )),
            (Surface::Api, _) => Ok(()),
            (Surface::Mount, Self::Service { .. }) => Ok(()),
            (Surface::Mount, Self::Operator { .. }) if open => Err(ApiError::new(
                ErrorCode::Unauthorized,
                "the producer mount needs a service key (--service-key), also on an open server",
            )),
            (Surface::Mount, Self::Operator { .. } | Self::Session { .. }) => Ok(()),
            (Surface::Mount, Self::User { .. }) => Err(forbidden(
                "a user token does not reach the producer mount; use a service key",
            )),
        }
    }

    /// Refuses (403 `session_mismatch`) a principal on a session that is not its own. A session
    /// token of a root is good for the sub-agent sessions of its tree too, whose ids start with
    /// the root's; a user token for the sessions whose root's stored `userId` is its subject and
    /// that no service owns; a service key for the sessions it started through the mount (and
    /// their trees). Ids no session has yet pass (the operation then answers
    /// `session_not_found`, or a chat starts one for the user).
    pub async fn may_act_on(&self, store: &Store, session_id: &str) -> Result<(), ApiError> {
        match self {
            Self::Operator { .. } => Ok(()),
            Self::Session {
                root_session_id, ..
            } if root_session_id == ids::root_of(session_id) => Ok(()),
            Self::Session { .. } => Err(mismatch()),
            Self::User { user_id, .. } => match root_of(store, session_id).await? {
                None => Ok(()),
                Some(root) if user_owns(user_id, &root) => Ok(()),
                Some(_) => Err(mismatch()),
            },
            Self::Service { name } => match root_of(store, session_id).await? {
                None => Ok(()),
                Some(root) if root.owner.as_ref().is_some_and(|o| o.service == *name) => Ok(()),
                Some(_) => Err(mismatch()),
            },
        }
    }

    /// The sessions this principal sees in a search: all of them for an operator, its own tree
    /// for a session token, its user's for a user token; a service key searches nothing.
    pub fn search_scope(&self) -> Result<SearchScope, ApiError> {
        match self {
            Self::Operator { .. } => Ok(SearchScope::All),
            Self::Session {
                root_session_id, ..
            } => Ok(SearchScope::Tree {
                root_session_id: root_session_id.clone(),
            }),
            Self::User { user_id, .. } => Ok(SearchScope::User {
                user_id: user_id.clone(),
            }),
            Self::Service { .. } => Err(forbidden("a service key searches no sessions")),
        }
    }

    /// Refuses (403 `forbidden`) what only operators may do, e.g. fork sessions or mint tokens.
    pub fn must_be_operator(&self) -> Result<(), ApiError> {
        match self {
            Self::Operator { .. } => Ok(()),
            Self::Session { .. } | Self::User { .. } | Self::Service { .. } => Err(forbidden(
                "a session, user or service credential cannot do this; use an operator key",
            )),
        }
    }

    /// The `userId` a new session of `agent_type` gets when this principal starts it on the API:
    /// the request's own for an operator; the subject for a user token whose agents include
    /// `agent_type` (a request naming another user is refused); a session token or a service
    /// key starts nothing here (403 `forbidden`; a service starts through the mount).
    pub fn may_start(
        &self,
        agent_type: &str,
        asked_user_id: Option<String>,
    ) -> Result<Option<String>, ApiError> {
        match self {
            Self::Operator { .. } => Ok(asked_user_id),
            Self::Session { .. } => Err(forbidden(
                "a session token cannot start sessions; use an operator or user token",
            )),
            Self::Service { .. } => Err(forbidden(
                "a service key starts sessions only through the producer mount",
            )),
            Self::User {
                user_id, agents, ..
            } => {
                if asked_user_id.is_some_and(|asked| &asked != user_id) {
                    return Err(forbidden(
                        "a user token starts sessions for its own userId only",
                    ));
                }
                if !agents.iter().any(|agent| agent == agent_type) {
                    return Err(forbidden("this user token may not start this agent type"));
                }
                Ok(Some(user_id.clone()))
            }
        }
    }

    /// Refuses a principal that may not start sessions through the producer mount: only a
    /// service key or an operator key does (403 `forbidden`).
    pub fn may_start_remote(&self) -> Result<(), ApiError> {
        match self {
            Self::Service { .. } | Self::Operator { .. } => Ok(()),
            Self::Session { .. } | Self::User { .. } => Err(forbidden(
                "only a service or operator key starts sessions through the producer mount",
            )),
        }
    }
}

/// The root session of `session_id`'s tree, if the id is well-formed and it exists.
async fn root_of(store: &Store, session_id: &str) -> Result<Option<SessionState>, ApiError> {
    if !ids::is_valid_session_id(session_id) {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            "malformed sessionId",
        ));
    }
    let root = SessionAddress::root(ids::root_of(session_id));
    Ok(store.session(&root).await?)
}

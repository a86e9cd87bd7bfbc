//! `POST /tokens` (an operator mints a user token for an app's end user) and
//! `POST /tokens/revoke` (a session or user token revoked before it expires, or every user token
//! of a `userId` issued so far).

use serde::{Deserialize, Serialize};

/// Shortest lifetime of a user token, in seconds.
pub const MIN_USER_TOKEN_TTL_SECS: u64 = 60;
/// Longest lifetime of a user token, in seconds (a day): a browser's credential is short-lived.
pub const MAX_USER_TOKEN_TTL_SECS: u64 = 24 * 3600;
/// Lifetime of a user token when the request names none, in seconds.
pub const DEFAULT_USER_TOKEN_TTL_SECS: u64 = 3600;
/// Most agent types one user token may start.
pub const MAX_USER_TOKEN_AGENTS: usize = 32;

/// Body of `POST /tokens`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenRequest {
    /// The end user: the token acts only on sessions whose `userId` is this, and the sessions
    /// it starts get it.
    pub user_id: String,
    /// The agent types the token may start chats and sessions of (1 to
    /// [`MAX_USER_TOKEN_AGENTS`], each served by this server).
    pub agents: Vec<String>,
    /// Seconds the token is valid ([`MIN_USER_TOKEN_TTL_SECS`] to [`MAX_USER_TOKEN_TTL_SECS`];
    /// default [`DEFAULT_USER_TOKEN_TTL_SECS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_secs: Option<u64>,
}

/// Answer of `POST /tokens`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TokenResponse {
    /// The bearer credential to hand to the user's browser.
    pub token: String,
    pub user_id: String,
    pub agents: Vec<String>,
    /// When the token expires, in seconds since the Unix epoch.
    pub expires_at: u64,
}

/// Body of `POST /tokens/revoke`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RevokeRequest {
    /// The session or user token to revoke.
    pub token: String,
}

/// Body of `POST /tokens/revoke` revoking by user (operators only): every user token of
/// `user_id` issued until now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RevokeUserRequest {
    pub user_id: String,
}

/// Answer of `POST /tokens/revoke` by user: every user token of `user_id` issued at or before
/// `issued_until` is refused (401 `unauthorized`) from now on, on every server sharing the Redis;
/// tokens minted later are not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RevokeUserResponse {
    pub user_id: String,
    /// The revocation's bound, in milliseconds since the epoch.
    pub issued_until: u64,
}

/// What kind of token a revocation revoked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum TokenKind {
    Session,
    User,
}

/// Answer of `POST /tokens/revoke`: the token is refused (401 `unauthorized`) from now on, on
/// every server sharing the Redis, until it would have expired anyway.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RevokeResponse {
    pub kind: TokenKind,
    /// When the token expires (and its revocation is forgotten), in seconds since the epoch.
    pub expires_at: u64,
}

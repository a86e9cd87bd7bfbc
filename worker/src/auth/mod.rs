//! Who may call the API. The server is fail-closed: it serves nothing until it is given an auth
//! configuration or told, explicitly, to serve without one.
//!
//! Built in: operator API keys (`Authorization: Bearer <key>`), which may do anything; session
//! tokens, which `/start` returns: short-lived, HMAC-signed and bound to the session the server
//! created, so a browser holding one can follow, answer and resume its own session and nothing
//! else; and user tokens (`user_token.rs`), which an app's backend mints with an operator key
//! (`POST /tokens`) for one end user: they start chats of the agents they name and act on the
//! sessions whose `userId` is their subject. Both kinds of token can be revoked
//! (`access.rs`, checked on every request). Service keys (`service.rs`) are the producer mount's
//! callers: another service running this server's agents as its remote children, on the mount's
//! routes only and on the sessions it started. Other schemes plug in through [`Authenticate`].
//! What each principal may do is `policy.rs`; the operations (`crate::ops`) apply it.

mod access;
mod policy;
mod service;
mod user_token;

pub(crate) use access::revoke;
pub use access::{authenticate, revoke_session_tokens};
pub use policy::{SearchScope, Surface};
pub use service::{MIN_KEY_BYTES, ServiceKeys};
pub use user_token::UserClaims;

use async_trait::async_trait;
use axum::http::{HeaderMap, header::AUTHORIZATION};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use baton_core::{ApiError, ErrorCode};
use ring::hmac;
use std::{fmt, sync::Arc, time::Duration};

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// An operator (API key) or an unauthenticated server: any session, any operation. The
    /// name is the key's configured one (`--named-api-key`), as the audit log names it.
    Operator { name: String },
    /// The holder of a session token: only that session's tree.
    Session {
        root_session_id: String,
        token: TokenRef,
    },
    /// The holder of a user token: the sessions whose `userId` is `user_id`, and new ones of
    /// the agent types `agents`.
    User {
        user_id: String,
        agents: Vec<String>,
        token: TokenRef,
    },
    /// A service key (`--service-key NAME=KEY`): the producer mount's routes only, the sessions
    /// it started there, and nothing of the API.
    Service { name: String },
}

/// What revoking a token needs of it: its id (the token's signature), its expiry and, for a user
/// token, when it was issued (a revocation of its user covers the tokens issued until then).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRef {
    pub id: String,
    /// Seconds since the Unix epoch.
    pub expires_at: u64,
    /// Milliseconds since the Unix epoch; 0 for a token that does not say (one minted before
    /// tokens said, which any revocation of its user covers). Session tokens carry 0.
    pub issued_at_ms: u64,
}

/// The name of an operator key given without one, and of every caller of an open server.
pub const UNNAMED_OPERATOR: &str = "operator";

impl Principal {
    /// An operator without a configured name.
    pub fn operator() -> Self {
        Self::Operator {
            name: UNNAMED_OPERATOR.to_owned(),
        }
    }

    /// Who this is in the audit log: the operator key's name, `session:<root>` or
    /// `user:<userId>`.
    pub fn name(&self) -> String {
        match self {
            Self::Operator { name } => name.clone(),
            Self::Session {
                root_session_id, ..
            } => format!("session:{root_session_id}"),
            Self::User { user_id, .. } => format!("user:{}", baton_core::escape::bounded(user_id)),
            Self::Service { name } => format!("service:{name}"),
        }
    }

    /// Whose rate limits a request spends (`ops/limits.rs`): `user:<userId>` for a user token
    /// (every token of the user shares them), `session:<root>` for a session token, the key's
    /// name for an operator, `service:<name>` for a service key.
    pub fn subject(&self) -> String {
        match self {
            Self::Operator { name } => name.clone(),
            Self::Session {
                root_session_id, ..
            } => format!("session:{root_session_id}"),
            Self::User { user_id, .. } => format!("user:{user_id}"),
            Self::Service { name } => format!("service:{name}"),
        }
    }
}

pub(crate) fn mismatch() -> ApiError {
    ApiError::new(
        ErrorCode::SessionMismatch,
        "this token is bound to another session",
    )
}

/// A custom authentication scheme: the request's headers to a principal, or a typed refusal
/// (401 `unauthorized`).
#[async_trait]
pub trait Authenticate: Send + Sync {
    async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, ApiError>;
}

/// How the server authenticates. [`Auth::Unset`] refuses to serve.
#[derive(Clone, Default)]
pub enum Auth {
    /// No configuration: `serve` refuses to start and every request answers 401.
    #[default]
    Unset,
    /// Explicitly open (loopback demos, private networks): every caller is an operator.
    AllowUnauthenticated,
    Builtin(Arc<BuiltinAuth>),
    Custom(Arc<dyn Authenticate>),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unset => "Unset",
            Self::AllowUnauthenticated => "AllowUnauthenticated",
            Self::Builtin(_) => "Builtin",
            Self::Custom(_) => "Custom",
        })
    }
}

impl Auth {
    /// The principal of a request, or 401.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Principal, ApiError> {
        match self {
            Self::Unset => Err(unauthorized("the server has no auth configuration")),
            Self::AllowUnauthenticated => Ok(Principal::Operator {
                name: "unauthenticated".to_owned(),
            }),
            Self::Builtin(builtin) => builtin.principal(bearer(headers)?),
            Self::Custom(custom) => custom.authenticate(headers).await,
        }
    }

    /// A token for a session `/start` just created, when the scheme issues them.
    pub fn token_for(&self, session_id: &str) -> Option<String> {
        match self {
            Self::Builtin(builtin) => Some(builtin.issue(session_id, now_secs())),
            _ => None,
        }
    }
}

/// The shortest token secret `batond` accepts: an HMAC-SHA256 key of fewer bytes than its
/// output is weaker than the tokens it signs.
pub const MIN_TOKEN_SECRET_BYTES: usize = 32;

/// How long a session token is valid unless configured otherwise.
pub const DEFAULT_TOKEN_TTL: Duration = Duration::from_secs(3600);

/// Operator keys and HMAC session tokens.
pub struct BuiltinAuth {
    /// Each key with the name the audit log gives its holder.
    api_keys: Vec<(String, String)>,
    signing_key: hmac::Key,
    token_ttl: Duration,
}

impl BuiltinAuth {
    /// `secret` signs session tokens; servers that share it accept each other's tokens. Each key's
    /// holder is named [`UNNAMED_OPERATOR`] in the audit log.
    pub fn new(api_keys: Vec<String>, secret: &[u8], token_ttl: Duration) -> Self {
        let named = api_keys
            .into_iter()
            .map(|key| (UNNAMED_OPERATOR.to_owned(), key))
            .collect();
        Self::with_named_keys(named, secret, token_ttl)
    }

    /// Like [`Self::new`], with `(name, key)` pairs: the audit log names a key's holder by it.
    pub fn with_named_keys(
        api_keys: Vec<(String, String)>,
        secret: &[u8],
        token_ttl: Duration,
    ) -> Self {
        Self {
            api_keys,
            signing_key: hmac::Key::new(hmac::HMAC_SHA256, secret),
            token_ttl,
        }
    }

    /// How long the session tokens this server issues are valid.
    pub fn session_token_ttl(&self) -> Duration {
        self.token_ttl
    }

    /// A token for `session_id`, valid until `now + ttl`: `v1.<session>.<expiry>.<mac>`.
    pub fn issue(&self, session_id: &str, now: u64) -> String {
        let claims = format!("v1.{session_id}.{}", now + self.token_ttl.as_secs());
        let tag = hmac::sign(&self.signing_key, claims.as_bytes());
        format!("{claims}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    fn principal(&self, credential: &str) -> Result<Principal, ApiError> {
        // Keys are compared in constant time (ring's verify of equal-length tags).
        let probe = hmac::sign(&self.signing_key, credential.as_bytes());
        let matching = self.api_keys.iter().find(|(_, key)| {
            hmac::verify(&self.signing_key, key.as_bytes(), probe.as_ref()).is_ok()
        });
        if let Some((name, _)) = matching {
            return Ok(Principal::Operator { name: name.clone() });
        }
        let now = now_secs();
        if credential.starts_with(user_token::PREFIX) {
            let (claims, token) = self.verify_user(credential, now)?;
            return Ok(Principal::User {
                user_id: claims.sub,
                agents: claims.agents,
                token,
            });
        }
        let (root_session_id, token) = self.verify_session(credential, now)?;
        Ok(Principal::Session {
            root_session_id,
            token,
        })
    }

    /// The session a token is bound to, if the token is genuine and not expired at `now`.
    pub fn verify(&self, token: &str, now: u64) -> Result<String, ApiError> {
        self.verify_session(token, now).map(|(session, _)| session)
    }

    /// The session a session token is bound to, with what revoking it needs.
    fn verify_session(&self, token: &str, now: u64) -> Result<(String, TokenRef), ApiError> {
        let (session, reference) = self.genuine_session_token(token)?;
        if now >= reference.expires_at {
            return Err(unauthorized("invalid or expired token"));
        }
        Ok((session, reference))
    }

    /// A session token's session and reference if its signature is this server's, expired or
    /// not.
    fn genuine_session_token(&self, token: &str) -> Result<(String, TokenRef), ApiError> {
        let invalid = || unauthorized("invalid or expired token");
        let (claims, tag) = token.rsplit_once('.').ok_or_else(invalid)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
        hmac::verify(&self.signing_key, claims.as_bytes(), &tag).map_err(|_| invalid())?;
        let mut parts = claims.splitn(3, '.');
        let (Some("v1"), Some(session), Some(expiry)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid());
        };
        let expiry: u64 = expiry.parse().map_err(|_| invalid())?;
        let id = token.rsplit('.').next().unwrap_or_default().to_owned();
        Ok((
            session.to_owned(),
            TokenRef {
                id,
                expires_at: expiry,
                issued_at_ms: 0,
            },
        ))
    }
}

/// The credential of `Authorization: Bearer <credential>`; the scheme is case-insensitive
/// (RFC 7235), so `bearer` and `BEARER` are the same.
pub(crate) fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    headers
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim_start().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, credential)| credential.trim())
        .filter(|credential| !credential.is_empty())
        .ok_or_else(|| unauthorized("missing bearer credentials"))
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(ErrorCode::Unauthorized, message)
}

pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> BuiltinAuth {
        BuiltinAuth::new(vec!["op-key".into()], b"secret", Duration::from_secs(60))
    }

    #[test]
    fn a_token_is_bound_to_its_session_until_it_expires() {
        let auth = auth();
        let token = auth.issue("s1", 1_000);
        assert_eq!(auth.verify(&token, 1_059).unwrap(), "s1");
        assert_eq!(
            auth.verify(&token, 1_060).unwrap_err().code,
            ErrorCode::Unauthorized
        );
        let forged = token.replacen("s1", "s2", 1);
        assert_eq!(
            auth.verify(&forged, 1_000).unwrap_err().code,
            ErrorCode::Unauthorized
        );
        let other_secret = BuiltinAuth::new(vec![], b"other", Duration::from_secs(60));
        assert!(other_secret.verify(&token, 1_000).is_err());
        assert!(auth.verify("v1.s1.2000", 1_000).is_err());
        assert!(auth.verify("", 1_000).is_err());
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let auth = auth();
        for header in [
            "Bearer op-key",
            "bearer op-key",
            "BEARER  op-key ",
            "BeArEr op-key",
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(AUTHORIZATION, header.parse().unwrap());
            assert_eq!(
                auth.principal(bearer(&headers).unwrap()).unwrap(),
                Principal::operator(),
                "{header:?}"
            );
        }
        for header in ["Basic op-key", "Bearer", "Bearer ", "Beareropkey", "op-key"] {
            let mut headers = HeaderMap::new();
            headers.insert(AUTHORIZATION, header.parse().unwrap());
            assert_eq!(
                bearer(&headers).unwrap_err().code,
                ErrorCode::Unauthorized,
                "{header:?}"
            );
        }
    }

    #[test]
    fn keys_make_operators_and_tokens_make_session_holders() {
        let auth = auth();
        assert_eq!(auth.principal("op-key").unwrap(), Principal::operator());
        let named = BuiltinAuth::with_named_keys(
            vec![("alice".into(), "k1".into()), ("bob".into(), "k2".into())],
            b"secret",
            Duration::from_secs(60),
        );
        assert_eq!(named.principal("k2").unwrap().name(), "bob");
        assert_eq!(
            named
                .principal(&named.issue("s1", now_secs()))
                .unwrap()
                .name(),
            "session:s1"
        );
        assert!(auth.principal("op-kex").is_err());
        let token = auth.issue("s1", now_secs());
        let holder = auth.principal(&token).unwrap();
        assert!(matches!(
            &holder,
            Principal::Session { root_session_id, token }
                if root_session_id == "s1" && token.expires_at > now_secs()
        ));
        assert_eq!(
            holder.search_scope().unwrap(),
            SearchScope::Tree {
                root_session_id: "s1".into()
            }
        );
        assert_eq!(
            holder.may_start("demo", None).unwrap_err().code,
            ErrorCode::Forbidden
        );
        assert_eq!(
            holder.must_be_operator().unwrap_err().code,
            ErrorCode::Forbidden
        );
    }
}

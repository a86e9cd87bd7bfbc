//! Who may call the API. The server is fail-closed: it serves nothing until it is given an auth
//! configuration or told, explicitly, to serve without one.
//!
//! Built in: operator API keys (`Authorization: Bearer <key>`), which may do anything, and
//! session tokens, which `/start` returns: short-lived, HMAC-signed and bound to the session the
//! server created, so a browser holding one can follow, answer and resume its own session and
//! nothing else. Other schemes plug in through [`Authenticate`].

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
    Session { root_session_id: String },
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

    /// Who this is in the audit log: the operator key's name, or `session:<root>`.
    pub fn name(&self) -> String {
        match self {
            Self::Operator { name } => name.clone(),
            Self::Session { root_session_id } => format!("session:{root_session_id}"),
        }
    }

    /// Refuses (403 `session_mismatch`) a session token used on another session. A token of a
    /// root is good for the sub-agent sessions of its tree too, whose ids start with the root's.
    pub fn may_act_on(&self, session_id: &str) -> Result<(), ApiError> {
        match self {
            Self::Operator { .. } => Ok(()),
            Self::Session { root_session_id }
                if root_session_id == baton_core::ids::root_of(session_id) =>
            {
                Ok(())
            }
            Self::Session { .. } => Err(ApiError::new(
                ErrorCode::SessionMismatch,
                "this token is bound to another session",
            )),
        }
    }

    /// The sessions this principal sees in a search: all of them for an operator, its own tree
    /// for a session token.
    pub fn search_scope(&self) -> crate::ops::SearchScope {
        match self {
            Self::Operator { .. } => crate::ops::SearchScope::All,
            Self::Session { root_session_id } => crate::ops::SearchScope::Tree {
                root_session_id: root_session_id.clone(),
            },
        }
    }

    /// Refuses (403 `forbidden`) what only operators may do, e.g. start sessions.
    pub fn must_be_operator(&self) -> Result<(), ApiError> {
        match self {
            Self::Operator { .. } => Ok(()),
            Self::Session { .. } => Err(ApiError::new(
                ErrorCode::Forbidden,
                "a session token cannot do this; use an operator key",
            )),
        }
    }
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
        self.verify(credential, now_secs())
            .map(|root_session_id| Principal::Session { root_session_id })
    }

    /// The session a token is bound to, if the token is genuine and not expired at `now`.
    pub fn verify(&self, token: &str, now: u64) -> Result<String, ApiError> {
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
        if now >= expiry {
            return Err(invalid());
        }
        Ok(session.to_owned())
    }
}

/// The credential of `Authorization: Bearer <credential>`; the scheme is case-insensitive
/// (RFC 7235), so `bearer` and `BEARER` are the same.
fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
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

fn now_secs() -> u64 {
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
        assert_eq!(
            holder,
            Principal::Session {
                root_session_id: "s1".into()
            }
        );
        assert!(holder.may_act_on("s1").is_ok());
        let child = format!("s1.{}", "0".repeat(32));
        assert!(holder.may_act_on(&child).is_ok());
        let other_child = format!("s2.{}", "0".repeat(32));
        assert!(holder.may_act_on(&other_child).is_err());
        assert_eq!(
            holder.may_act_on("s2").unwrap_err().code,
            ErrorCode::SessionMismatch
        );
        assert_eq!(
            holder.must_be_operator().unwrap_err().code,
            ErrorCode::Forbidden
        );
    }
}

//! User tokens: `u1.<claims>.<mac>`, the claims (subject `userId`, agent types, expiry) as
//! base64url JSON, signed with the server's token secret like session tokens. An app's backend
//! mints one with an operator key (`POST /tokens`) and hands it to the user's browser. Each mint
//! also signs when it was issued and a random nonce, so no two tokens are the same (each is
//! revoked alone) and a user's tokens issued so far can be revoked at once; tokens minted
//! before carry neither and still verify (their issue time counts as the epoch's).

use super::{BuiltinAuth, TokenRef, unauthorized};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use baton_core::ApiError;
use ring::hmac;
use serde::{Deserialize, Serialize};

/// How every user token starts.
pub(super) const PREFIX: &str = "u1.";

/// What a user token says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserClaims {
    /// The end user's `userId`.
    pub sub: String,
    /// The agent types it may start.
    pub agents: Vec<String>,
    /// Expiry, in seconds since the Unix epoch.
    pub exp: u64,
}

/// What a user token signs: its claims, when it was issued, and a nonce.
#[derive(Debug, Serialize, Deserialize)]
struct SignedClaims {
    #[serde(flatten)]
    claims: UserClaims,
    /// When it was issued, in milliseconds since the Unix epoch; absent in older tokens.
    #[serde(default, rename = "iatMs", skip_serializing_if = "Option::is_none")]
    issued_ms: Option<u64>,
    /// A random nonce: two mints of the same claims in the same millisecond still differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jti: Option<String>,
}

impl BuiltinAuth {
    /// A user token carrying `claims`, issued now.
    pub fn issue_user(&self, claims: &UserClaims) -> String {
        let signed = SignedClaims {
            claims: claims.clone(),
            issued_ms: Some(now_ms()),
            jti: Some(uuid::Uuid::new_v4().simple().to_string()),
        };
        let json = serde_json::to_vec(&signed).unwrap_or_default();
        let signed = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(json));
        let tag = hmac::sign(&self.signing_key, signed.as_bytes());
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// A user token's claims and reference, if it is genuine and not expired at `now`.
    pub(super) fn verify_user(
        &self,
        token: &str,
        now: u64,
    ) -> Result<(UserClaims, TokenRef), ApiError> {
        let (claims, reference) = self.genuine_user_token(token)?;
        if now >= claims.exp {
            return Err(unauthorized("invalid or expired token"));
        }
        Ok((claims, reference))
    }

    /// A user token's claims and reference if its signature is this server's, expired or not.
    pub(super) fn genuine_user_token(
        &self,
        token: &str,
    ) -> Result<(UserClaims, TokenRef), ApiError> {
        let (signed, reference) = self.signed_user_token(token)?;
        Ok((signed.claims, reference))
    }

    fn signed_user_token(&self, token: &str) -> Result<(SignedClaims, TokenRef), ApiError> {
        let invalid = || unauthorized("invalid or expired token");
        let (signed, tag) = token.rsplit_once('.').ok_or_else(invalid)?;
        let mac = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
        hmac::verify(&self.signing_key, signed.as_bytes(), &mac).map_err(|_| invalid())?;
        let payload = signed.strip_prefix(PREFIX).ok_or_else(invalid)?;
        let json = URL_SAFE_NO_PAD.decode(payload).map_err(|_| invalid())?;
        let signed: SignedClaims = serde_json::from_slice(&json).map_err(|_| invalid())?;
        let reference = TokenRef {
            id: tag.to_owned(),
            expires_at: signed.claims.exp,
            issued_at_ms: signed.issued_ms.unwrap_or(0),
        };
        Ok((signed, reference))
    }
}

/// Now, in milliseconds since the Unix epoch.
pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Principal;
    use baton_core::ErrorCode;
    use std::time::Duration;

    #[test]
    fn a_user_token_names_its_user_and_agents_until_it_expires() {
        let auth = BuiltinAuth::new(vec!["op".into()], b"secret", Duration::from_secs(60));
        let claims = UserClaims {
            sub: "ada".into(),
            agents: vec!["demo".into()],
            exp: super::super::now_secs() + 30,
        };
        let token = auth.issue_user(&claims);
        let holder = auth.principal(&token).unwrap();
        let Principal::User {
            user_id,
            agents,
            token: reference,
        } = &holder
        else {
            panic!("not a user: {holder:?}");
        };
        assert_eq!(
            (user_id.as_str(), agents.as_slice()),
            ("ada", &["demo".to_owned()][..])
        );
        assert_eq!(reference.expires_at, claims.exp);
        assert_eq!(holder.name(), "user:ada");
        assert_eq!(holder.may_start("demo", None).unwrap(), Some("ada".into()));
        assert_eq!(
            holder
                .may_start("demo", Some("bob".into()))
                .unwrap_err()
                .code,
            ErrorCode::Forbidden
        );
        assert_eq!(
            holder.may_start("other", None).unwrap_err().code,
            ErrorCode::Forbidden
        );
        assert_eq!(
            holder.must_be_operator().unwrap_err().code,
            ErrorCode::Forbidden
        );
        let expired = auth.issue_user(&UserClaims {
            exp: 1,
            ..claims.clone()
        });
        assert_eq!(
            auth.principal(&expired).unwrap_err().code,
            ErrorCode::Unauthorized
        );
        assert!(auth.genuine_user_token(&expired).is_ok(), "still revocable");
        // Another user's claims under this token's signature are refused.
        let (signed, tag) = token.rsplit_once('.').unwrap();
        let forged_claims = UserClaims {
            sub: "eve".into(),
            ..claims
        };
        let forged = format!(
            "{PREFIX}{}.{tag}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged_claims).unwrap())
        );
        assert_ne!(signed, forged.rsplit_once('.').unwrap().0);
        assert_eq!(
            auth.principal(&forged).unwrap_err().code,
            ErrorCode::Unauthorized
        );
        let other = BuiltinAuth::new(vec![], b"other", Duration::from_secs(60));
        assert!(other.principal(&token).is_err());
    }

    #[test]
    fn each_mint_differs_and_a_token_minted_before_nonces_still_verifies() {
        let auth = BuiltinAuth::new(vec![], b"secret", Duration::from_secs(60));
        let claims = UserClaims {
            sub: "ada".into(),
            agents: vec!["demo".into()],
            exp: super::super::now_secs() + 30,
        };
        let (first, second) = (auth.issue_user(&claims), auth.issue_user(&claims));
        assert_ne!(first, second);
        let issued = auth.genuine_user_token(&first).unwrap().1.issued_at_ms;
        assert!(issued > 0 && issued <= now_ms());
        assert_eq!(auth.genuine_user_token(&second).unwrap().0, claims);
        // A token of the older form: the claims alone, signed.
        let signed = format!(
            "{PREFIX}{}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap())
        );
        let tag = hmac::sign(&auth.signing_key, signed.as_bytes());
        let old = format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()));
        assert!(matches!(auth.principal(&old), Ok(Principal::User { .. })));
        assert_eq!(auth.genuine_user_token(&old).unwrap().1.issued_at_ms, 0);
        assert!(auth.genuine_user_token("u1.not.a-token").is_err());
    }
}

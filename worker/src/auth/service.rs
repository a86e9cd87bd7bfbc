//! Service keys: the credentials of the services that call this server's producer mount (another
//! Baton running this server's agents as its remote children). A service key is checked before
//! the server's own scheme, so an open server (`--allow-unauthenticated`) still knows its mount's
//! callers; it reaches the mount's routes only, and the sessions it started there.

use super::Principal;
use ring::hmac;
use std::fmt;

/// The shortest service key `batond` accepts (as for operator keys and the token secret).
pub const MIN_KEY_BYTES: usize = 32;

/// The service keys a server knows, each with the service's name.
#[derive(Clone)]
pub struct ServiceKeys {
    keys: Vec<(String, String)>,
    /// Keys are compared as HMAC tags under this process's random key: in constant time,
    /// whatever the lengths.
    probe: hmac::Key,
}

impl ServiceKeys {
    /// `(name, key)` pairs: the name is whom the audit log and a session's owner name.
    pub fn new(keys: Vec<(String, String)>) -> Self {
        let mut secret = [0u8; 32];
        // Without system randomness the probe key is fixed; the comparison stays constant-time.
        let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret);
        Self {
            keys,
            probe: hmac::Key::new(hmac::HMAC_SHA256, &secret),
        }
    }

    /// No service keys: the mount answers 401 to everyone but operators of a keyed server.
    pub fn none() -> Self {
        Self::new(Vec::new())
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The service a credential is the key of, if any.
    pub(super) fn principal(&self, credential: &str) -> Option<Principal> {
        if self.keys.is_empty() {
            return None;
        }
        let probe = hmac::sign(&self.probe, credential.as_bytes());
        self.keys
            .iter()
            .find(|(_, key)| hmac::verify(&self.probe, key.as_bytes(), probe.as_ref()).is_ok())
            .map(|(name, _)| Principal::Service { name: name.clone() })
    }
}

impl Default for ServiceKeys {
    fn default() -> Self {
        Self::none()
    }
}

impl fmt::Debug for ServiceKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.keys.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("ServiceKeys")
            .field("names", &names)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_key_names_its_service_and_nothing_else_matches() {
        let keys = ServiceKeys::new(vec![
            ("consumer".into(), "k".repeat(32)),
            ("other".into(), "o".repeat(32)),
        ]);
        assert_eq!(
            keys.principal(&"o".repeat(32)),
            Some(Principal::Service {
                name: "other".into()
            })
        );
        assert_eq!(keys.principal(&"k".repeat(31)), None);
        assert_eq!(keys.principal(""), None);
        assert_eq!(ServiceKeys::none().principal("anything"), None);
        assert!(!format!("{keys:?}").contains("kkkk"), "Debug shows no key");
    }
}

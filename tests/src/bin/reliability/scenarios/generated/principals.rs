//! Who the generated requests speak as (the operator key, two users' tokens, a producer-side
//! user's, the producer mount's service key, the known sessions' tokens, none or garbage), whose
//! the known sessions are, and the check that an answer kept to its credential's sessions.

use super::requests::Request;
use crate::{rng::Rng, roles};
use std::collections::HashSet;

/// The `userId` of user A: some known sessions are theirs, and the producer mount's sessions
/// carry it too (as a remote child carries its caller's).
pub const USER_A: &str = "campaign-a";
/// The second user, who owns none of the known sessions.
pub const USER_B: &str = "campaign-b";
/// The caller session the mount's known sessions name.
pub const CALLER_SESSION: &str = "caller-1";

/// The credential a generated request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    Operator,
    UserA,
    UserB,
    /// A producer-side user token with user A's `userId` (issue 35, item 1): to the mount's
    /// sessions it is the attacker; to user A's own sessions it is user A.
    ProducerUser,
    Service,
    /// The token of the known session `session_tokens[i]`.
    Session(usize),
    None,
    /// What no scheme accepts (`Bearer x`, `Basic …`, an empty bearer).
    Garbage,
}

impl Credential {
    pub fn label(self) -> &'static str {
        match self {
            Self::Operator => "operator",
            Self::UserA => "user A",
            Self::UserB => "user B",
            Self::ProducerUser => "producer user",
            Self::Service => "service",
            Self::Session(_) => "session token",
            Self::None => "none",
            Self::Garbage => "garbage",
        }
    }
}

/// The credentials the requests carry and what each known session is.
pub struct Principals {
    pub user_a: String,
    pub user_b: String,
    pub producer_user: String,
    /// Each known session's token (from its start's answer), with the root it is bound to.
    pub session_tokens: Vec<(String, String)>,
    /// Every known session.
    pub sessions: HashSet<String>,
    /// Those user A may act on: their `userId` is user A's and no service owns them.
    pub of_user_a: HashSet<String>,
    /// Those the service key started through the producer mount (with user A's `userId`).
    pub of_service: HashSet<String>,
}

impl Principals {
    /// Mostly the operator key, then the users', the service's and the sessions' tokens; the
    /// garbage headers are the generator's own mutation.
    pub fn pick(&self, rng: &mut Rng) -> Credential {
        match rng.below(100) {
            0..=44 => Credential::Operator,
            45..=58 => Credential::UserA,
            59..=72 => Credential::UserB,
            73..=78 => Credential::ProducerUser,
            79..=89 => Credential::Service,
            90..=96 if !self.session_tokens.is_empty() => {
                Credential::Session(rng.below(self.session_tokens.len() as u64) as usize)
            }
            _ => Credential::None,
        }
    }

    /// The `Authorization` value of `credential`, if it has one.
    pub fn header(&self, credential: Credential) -> Option<String> {
        let token = match credential {
            Credential::Operator => roles::OPERATOR_KEY,
            Credential::UserA => &self.user_a,
            Credential::UserB => &self.user_b,
            Credential::ProducerUser => &self.producer_user,
            Credential::Service => roles::SERVICE_KEY,
            Credential::Session(i) => &self.session_tokens[i].1,
            Credential::None | Credential::Garbage => return None,
        };
        Some(format!("Bearer {token}"))
    }

    /// Whether `root` is a known session that `credential` may not act on, see or list.
    fn is_foreign(&self, credential: Credential, root: &str) -> bool {
        if !self.sessions.contains(root) {
            return false;
        }
        match credential {
            Credential::Operator => false,
            Credential::UserA | Credential::ProducerUser => !self.of_user_a.contains(root),
            Credential::Service => !self.of_service.contains(root),
            Credential::Session(i) => self.session_tokens[i].0 != root,
            Credential::UserB | Credential::None | Credential::Garbage => true,
        }
    }

    /// Why the answer `status`/`body` to `request` broke its credential's authorization, if it
    /// did. Only a success can: a credential of nobody, or a service key off the mount, is
    /// never answered 2xx (but by the pages anyone may load); a request naming a known session
    /// that is not its credential's is refused; and no answer to a credential other than the
    /// operator's (the empty pages of `/sessions` and `/pending` included) shows such a
    /// session's id.
    pub fn trespass(&self, request: &Request, status: u16, body: &[u8]) -> Option<String> {
        let credential = request.credential;
        if !(200..300).contains(&status)
            || credential == Credential::Operator
            || request.is_public()
        {
            return None;
        }
        match credential {
            Credential::None | Credential::Garbage => return Some("no credential".to_owned()),
            Credential::Service if !request.is_on_mount() => {
                return Some("a service key off the mount".to_owned());
            }
            _ => {}
        }
        // The listing routes answer an empty page for a root outside the caller's scope; their
        // rows are what is checked.
        if !request.is_listing()
            && let Some(id) = request
                .named
                .iter()
                .find(|id| self.is_foreign(credential, root_of(id)))
        {
            return Some(format!("named {id}"));
        }
        let text = String::from_utf8_lossy(body);
        self.sessions
            .iter()
            .find(|session| self.is_foreign(credential, session) && text.contains(session.as_str()))
            .map(|session| format!("its answer shows {session}"))
    }

    /// Whether `request` named a known session its credential may not act on (to count how
    /// often the check had something to refuse).
    pub fn names_foreign(&self, request: &Request) -> bool {
        request
            .named
            .iter()
            .any(|id| self.is_foreign(request.credential, root_of(id)))
    }
}

/// The root of a session id (`<root>.<child>` names a child of `<root>`'s tree).
fn root_of(session_id: &str) -> &str {
    session_id.split('.').next().unwrap_or(session_id)
}

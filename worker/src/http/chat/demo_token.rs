//! `POST /chat/demo-token`: `batond dev`'s demo mode only (absent from `batond server`, and
//! from `batond dev` with an operator key: the binary turns demo mode on for an open dev server
//! only, with a warning at start). The demo page asks it for a user token of the demo user,
//! good for every agent type served, so the page never takes a credential from its URL. An open
//! server (`--allow-unauthenticated`) answers no token: the page then sends none.

use crate::{
    auth::{Auth, UserClaims},
    state::AppState,
};
use axum::{Json, extract::State};
use baton_core::tokens::DEFAULT_USER_TOKEN_TTL_SECS;
use serde::Serialize;

/// The `userId` of the demo page's user.
pub(super) const DEMO_USER_ID: &str = "demo-user";

/// The answer: the demo user's token (none on an open server).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DemoToken {
    token: Option<String>,
    user_id: &'static str,
}

/// Mints the demo user's token (audited as a mint by the demo mode).
pub(super) async fn demo_token(State(state): State<AppState>) -> Json<DemoToken> {
    let token = match &state.options.auth {
        Auth::Builtin(builtin) => {
            let claims = UserClaims {
                sub: DEMO_USER_ID.to_owned(),
                agents: state.registry.agent_types().map(str::to_owned).collect(),
                exp: crate::auth::now_secs() + DEFAULT_USER_TOKEN_TTL_SECS,
            };
            let minted = Ok::<_, baton_core::ApiError>(());
            let demo = crate::auth::Principal::Operator {
                name: "demo-mode".to_owned(),
            };
            crate::audit::token(&demo, "token_mint", "user:demo-user", &minted);
            Some(builtin.issue_user(&claims))
        }
        _ => None,
    };
    Json(DemoToken {
        token,
        user_id: DEMO_USER_ID,
    })
}

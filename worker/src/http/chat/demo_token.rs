//! `POST /chat/demo-token`: `batond dev`'s demo mode only (absent from `batond server`, and
//! from `batond dev` with an operator key: the binary turns demo mode on for an open dev server
//! only, with a warning at start). The demo page asks it for a user token of the demo user,
//! good for every agent type served, so the page never takes a credential from its URL. An open
//! server (`--allow-unauthenticated`) answers no token: the page then sends none.

use crate::state::AppState;
use axum::{Json, extract::State};
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
    let token = crate::ops::mint_demo_token(&state, DEMO_USER_ID);
    Json(DemoToken {
        token,
        user_id: DEMO_USER_ID,
    })
}

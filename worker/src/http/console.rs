//! The operator console (`GET /console`): one HTML file with its script, embedded in the binary,
//! no build step. It signs in with an operator key kept in the browser's `sessionStorage` (never
//! in a URL) and calls the API with it: the sessions list, the inbox, one session.

use axum::response::Html;

/// The page's source.
const PAGE: &str = include_str!("../../static/console.html");

/// `GET /console`: the page (without auth: it holds no data; every call it makes sends the key).
pub(super) async fn page() -> Html<&'static str> {
    Html(PAGE)
}

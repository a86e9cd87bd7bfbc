//! The demo chat page: one HTML file with its script, embedded in the binary, no build step.

use axum::response::Html;

/// The page's source.
const PAGE: &str = include_str!("../../../static/chat.html");

/// `GET /chat`: the page.
pub(super) async fn page() -> Html<&'static str> {
    Html(PAGE)
}

//! The operator console (`GET /console`): one HTML file with its script, embedded in the binary,
//! no build step. It signs in with an operator key kept in the browser's `sessionStorage` (never
//! in a URL) and calls the API with it: the sessions list, the inbox, one session.

use crate::state::AppState;
use axum::{extract::State, response::Html};

/// The page's source.
const PAGE: &str = include_str!("../../static/console.html");

/// Where the page reads the Temporal UI's address from (a `<meta>` element's content).
const TEMPORAL_UI_PLACEHOLDER: &str = "{{temporalUiUrl}}";

/// `GET /console`: the page (without auth: it holds no data; every call it makes sends the key),
/// with the Temporal UI's address when one is configured.
pub(super) async fn page(State(state): State<AppState>) -> Html<String> {
    let url = state.options.temporal_ui_url.as_deref().unwrap_or_default();
    Html(PAGE.replace(TEMPORAL_UI_PLACEHOLDER, &html_attribute(url)))
}

/// Text safe inside a double-quoted HTML attribute.
fn html_attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_address_cannot_leave_its_attribute() {
        assert_eq!(
            super::html_attribute(r#"x"><script>&"#),
            "x&quot;&gt;&lt;script&gt;&amp;"
        );
        assert!(super::PAGE.contains(super::TEMPORAL_UI_PLACEHOLDER));
    }
}

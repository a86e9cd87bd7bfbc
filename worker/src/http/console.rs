//! The operator console (`GET /console`): one HTML file with its script and style as files of
//! their own (`/console-assets/…`: the CSP forbids inline code), embedded in the binary, no
//! build step, each served under the pages' security headers (`page_headers.rs`: no inline
//! script or style, never framed). It signs in with an operator key kept in the browser's
//! `sessionStorage` (never in a URL) and calls the API with it: the sessions list, the inbox,
//! one session.

use super::page_headers::with_page_headers;
use crate::state::AppState;
use axum::{extract::State, response::Response};

/// The page's source.
const PAGE: &str = include_str!("../../static/console.html");
const SCRIPT: &str = include_str!("../../static/console.js");
const STYLE: &str = include_str!("../../static/console.css");

/// Where the page's script and style are served.
pub(super) const SCRIPT_PATH: &str = "/console-assets/console.js";
pub(super) const STYLE_PATH: &str = "/console-assets/console.css";

/// Where the page reads the Temporal UI's address from (a `<meta>` element's content).
const TEMPORAL_UI_PLACEHOLDER: &str = "{{temporalUiUrl}}";

/// `GET /console`: the page (without auth: it holds no data; every call it makes sends the key),
/// with the Temporal UI's address when one is configured.
pub(super) async fn page(State(state): State<AppState>) -> Response {
    let url = state.options.temporal_ui_url.as_deref().unwrap_or_default();
    let page = PAGE.replace(TEMPORAL_UI_PLACEHOLDER, &html_attribute(url));
    with_page_headers("text/html; charset=utf-8", page)
}

/// `GET /console-assets/console.js`.
pub(super) async fn script() -> Response {
    with_page_headers("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /console-assets/console.css`.
pub(super) async fn style() -> Response {
    with_page_headers("text/css; charset=utf-8", STYLE)
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
        assert!(
            super::PAGE.contains(super::SCRIPT_PATH) && super::PAGE.contains(super::STYLE_PATH)
        );
    }
}

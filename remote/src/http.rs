//! What the clients of both transports share about HTTP: which statuses are worth a retry, and
//! how a request's failure is shown (without its URL).

use reqwest::StatusCode;

/// A status a request is retried on: the server's failure, or its asking to slow down.
pub(crate) fn retryable(status: StatusCode) -> bool {
    status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS
}

/// A request's failure, its URL named as `who` (the query names nothing secret, but is noise).
pub(crate) fn error_text(error: &reqwest::Error, who: &str) -> String {
    if error.is_timeout() {
        "the request timed out".to_owned()
    } else if error.is_connect() {
        "it could not be connected to".to_owned()
    } else {
        let mut shown = error.to_string();
        if let Some(url) = error.url() {
            shown = shown.replace(url.as_str(), who);
        }
        shown
    }
}

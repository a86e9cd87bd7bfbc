//! Which web origins a browser may call the API from (CORS). None by default: only the pages
//! the server serves itself (same origin) reach it from a browser. `*` lets any origin in, and
//! is never combined with credentials: the API's credential is the `Authorization` header,
//! never a cookie, so no answer carries `Access-Control-Allow-Credentials`.

use axum::http::HeaderValue;

/// The origins browsers may call from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AllowedOrigins {
    /// Same origin only: no CORS headers, a preflight answers 405.
    #[default]
    None,
    /// Any origin (`*`).
    Any,
    /// These exact origins (`scheme://host[:port]`).
    List(Vec<HeaderValue>),
}

impl AllowedOrigins {
    /// The origins from their configured texts: empty is none, `*` alone is any, else each must
    /// be an origin (`http` or `https`, a host, an optional port, no path).
    pub fn parse(items: &[String]) -> Result<Self, String> {
        let items: Vec<&str> = items.iter().map(|item| item.trim()).collect();
        if items.is_empty() {
            return Ok(Self::None);
        }
        if items.contains(&"*") {
            if items.len() > 1 {
                return Err("`*` allows every origin; give it alone".to_owned());
            }
            return Ok(Self::Any);
        }
        let mut origins = Vec::with_capacity(items.len());
        for item in items {
            origins.push(checked_origin(item)?);
        }
        Ok(Self::List(origins))
    }
}

fn checked_origin(item: &str) -> Result<HeaderValue, String> {
    let refuse = || {
        Err(format!(
            "{:?} is not an origin (scheme://host[:port], http or https, no path)",
            baton_core::escape::bounded(item)
        ))
    };
    let Some((scheme, rest)) = item.split_once("://") else {
        return refuse();
    };
    let host_ok = !rest.is_empty()
        && !rest.contains(['/', '?', '#', '@', ' '])
        && rest.chars().all(|c| c.is_ascii_graphic());
    if !matches!(scheme, "http" | "https") || !host_ok {
        return refuse();
    }
    HeaderValue::from_str(item).or_else(|_| refuse())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_none_by_default_and_checked() {
        assert_eq!(AllowedOrigins::parse(&[]).unwrap(), AllowedOrigins::None);
        assert_eq!(
            AllowedOrigins::parse(&["*".into()]).unwrap(),
            AllowedOrigins::Any
        );
        let list =
            AllowedOrigins::parse(&["https://app.example".into(), "http://127.0.0.1:5173".into()])
                .unwrap();
        assert!(matches!(list, AllowedOrigins::List(ref o) if o.len() == 2));
        for bad in [
            "app.example",
            "https://app.example/",
            "ftp://app.example",
            "https://",
            "https://a b",
            "https://user@app.example",
        ] {
            assert!(AllowedOrigins::parse(&[bad.into()]).is_err(), "{bad}");
        }
        assert!(AllowedOrigins::parse(&["*".into(), "https://a.example".into()]).is_err());
    }
}

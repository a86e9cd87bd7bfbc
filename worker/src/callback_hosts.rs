//! Which hosts a producer mount's caller may name in its callback URL: the producer's
//! `--callback-hosts` list (`host` for any port, `host:port` for one). An empty list refuses
//! every callback, so a producer POSTs nowhere its operator did not name (`batond dev` lists
//! loopback, for its demo). A refused callback is a `validation_error` before anything is
//! written; the caller still gets its child's end by polling `status`.

use baton_core::{ApiError, ErrorCode, remote};

/// The callback hosts a producer accepts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallbackHosts(Vec<CallbackHost>);

/// One entry: a host (lower case, an IPv6 address in brackets) and, when given, its one port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CallbackHost {
    host: String,
    port: Option<u16>,
}

impl CallbackHosts {
    /// Parses `host[:port]` entries (`[::1]:8080` for IPv6); a URL, a path or a bad port is
    /// refused.
    pub fn parse(entries: &[String]) -> Result<Self, String> {
        entries
            .iter()
            .map(|entry| entry.trim())
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let url = reqwest::Url::parse(&format!("http://{entry}/"))
                    .map_err(|error| format!("{entry:?} is no host[:port]: {error}"))?;
                let bare = url.path() == "/" && url.username().is_empty() && url.query().is_none();
                match url.host_str() {
                    Some(host) if bare && !entry.contains('/') => Ok(CallbackHost {
                        host: host.to_ascii_lowercase(),
                        port: url.port(),
                    }),
                    _ => Err(format!("{entry:?} is no host[:port]")),
                }
            })
            .collect::<Result<_, _>>()
            .map(Self)
    }

    /// Loopback on any port: `batond dev`'s default.
    pub fn loopback() -> Self {
        Self(
            ["localhost", "127.0.0.1", "[::1]"]
                .into_iter()
                .map(|host| CallbackHost {
                    host: host.to_owned(),
                    port: None,
                })
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `url`'s host (as the HTTP client will connect to it, after the URL's own
    /// normalisation) and port are listed.
    pub fn allows(&self, url: &str) -> bool {
        let Ok(url) = reqwest::Url::parse(url) else {
            return false;
        };
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return false;
        };
        let host = host.to_ascii_lowercase();
        self.0
            .iter()
            .any(|entry| entry.host == host && entry.port.is_none_or(|p| p == port))
    }
}

/// Refuses a mount start's callback whose host this producer does not list, as a
/// `validation_error` naming the flag; a start without one passes.
pub fn check_callback_host(
    hosts: &CallbackHosts,
    callback: Option<&remote::Callback>,
) -> Result<(), ApiError> {
    let Some(callback) = callback else {
        return Ok(());
    };
    if hosts.allows(&callback.url) {
        return Ok(());
    }
    let message = if hosts.is_empty() {
        "this producer accepts no callback: its operator lists the hosts it may call back with \
         --callback-hosts (BATON_CALLBACK_HOSTS); start without one and poll status"
    } else {
        "callback.url's host is not one this producer calls back (--callback-hosts)"
    };
    Err(ApiError::new(ErrorCode::ValidationError, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_hosts_and_ports_are_called_back() {
        let hosts = CallbackHosts::parse(&[
            "consumer.internal".to_owned(),
            "Hooks.Example.com:8443".to_owned(),
            "[::1]:9000".to_owned(),
        ])
        .unwrap();
        for allowed in [
            "https://consumer.internal/remote-callbacks/s1",
            "http://CONSUMER.internal:1234/x",
            "https://hooks.example.com:8443/cb",
            "http://[::1]:9000/cb",
        ] {
            assert!(hosts.allows(allowed), "{allowed}");
        }
        for refused in [
            "https://hooks.example.com/cb",
            "http://127.0.0.1:9000/cb",
            "http://[::1]:9001/cb",
            "http://consumer.internal.evil.com/cb",
            "http://consumer.internal@127.0.0.1/cb",
            "not a url",
        ] {
            assert!(!hosts.allows(refused), "{refused}");
        }
        assert!(!CallbackHosts::default().allows("http://127.0.0.1/cb"));
        let loopback = CallbackHosts::loopback();
        assert!(loopback.allows("http://127.0.0.1:8080/cb"));
        assert!(loopback.allows("http://localhost/cb"));
        assert!(loopback.allows("http://[::1]:1/cb"));
        // The URL's own normalisation: `127.1` is 127.0.0.1.
        assert!(loopback.allows("http://127.1:8080/cb"));
        assert!(!loopback.allows("http://10.0.0.1/cb"));
        for bad in ["http://host/", "host/path", "host:99999", "user@host"] {
            assert!(CallbackHosts::parse(&[bad.to_owned()]).is_err(), "{bad}");
        }
    }
}

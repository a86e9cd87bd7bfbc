//! Flags of the service-key group: the credentials of the services that call this server's
//! producer mount (another Baton running this server's agents as its remote children). Each key
//! is checked before the server serves: a name of plain letters, at least 32 bytes of key.

use baton_worker::auth::{MIN_KEY_BYTES, ServiceKeys};
use clap::Args;

#[derive(Debug, Args)]
#[command(next_help_heading = "Service keys (producer mount)")]
pub(crate) struct ServiceArgs {
    /// A service key for the producer mount, `NAME=KEY` (repeat for several): its holder may
    /// start sessions through the mount and act on those it started, and nothing else of the
    /// API. The mount needs one even on an open server (`--allow-unauthenticated`). Prefer
    /// BATON_SERVICE_KEYS: a flag shows in `ps`.
    #[arg(
        long = "service-key",
        env = "BATON_SERVICE_KEYS",
        value_delimiter = ',',
        value_parser = service_key,
        global = true,
        hide_env_values = true
    )]
    pub(crate) service_keys: Vec<(String, String)>,
}

impl ServiceArgs {
    /// The service keys, two of one name refused.
    pub(crate) fn service_keys(&self) -> anyhow::Result<ServiceKeys> {
        for (index, (name, _)) in self.service_keys.iter().enumerate() {
            if self.service_keys[..index]
                .iter()
                .any(|(seen, _)| seen == name)
            {
                anyhow::bail!("two service keys are named {name:?}");
            }
        }
        Ok(ServiceKeys::new(self.service_keys.clone()))
    }
}

/// A `NAME=KEY` of --service-key: the name names the service in the audit log and as the owner
/// of the sessions it starts, so it is plain; the key is long enough not to be guessed.
fn service_key(text: &str) -> Result<(String, String), String> {
    let Some((name, key)) = text.split_once('=') else {
        return Err("expected NAME=KEY".to_owned());
    };
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
    if name.is_empty() || name.len() > 64 || !name.chars().all(plain) {
        return Err("the name must be 1 to 64 letters, digits, '-', '_' or '.'".to_owned());
    }
    if key.len() < MIN_KEY_BYTES {
        return Err(format!(
            "the key is {} bytes; it must be at least {MIN_KEY_BYTES} (make one with \
             `openssl rand -base64 32`)",
            key.len()
        ));
    }
    Ok((name.to_owned(), key.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_key_needs_a_plain_name_and_32_bytes() {
        let key = "k".repeat(32);
        assert_eq!(
            service_key(&format!("consumer={key}")).unwrap(),
            ("consumer".into(), key.clone())
        );
        for bad in [
            "consumer".to_owned(),
            format!("={key}"),
            format!("a:b={key}"),
            format!("a b={key}"),
            "consumer=short".to_owned(),
        ] {
            assert!(service_key(&bad).is_err(), "{bad:?}");
        }
    }
}

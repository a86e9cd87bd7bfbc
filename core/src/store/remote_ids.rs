//! The secret remote children's ids are derived with (`subagent::remote_child_id`): one per key
//! prefix, shared by every process of the service, made by the first that needs it
//! (`SET … NX GET`, one command: two processes racing agree on the winner's) and cached for the
//! process's life. It never leaves Redis and this service, so a producer's user cannot compute
//! the id of a child before its caller starts it. A plain command, not a script: it is no
//! session's state.

use super::{Error, SessionAddress, Store, keys};

impl Store {
    /// The id of the remote child a call of `parent` starts (see
    /// `crate::subagent::remote_child_id`).
    pub async fn remote_child_id(
        &self,
        parent: &SessionAddress,
        tool_call_id: &str,
    ) -> Result<String, Error> {
        let secret = self.remote_id_secret().await?;
        Ok(crate::subagent::remote_child_id(
            secret,
            parent,
            tool_call_id,
        ))
    }

    async fn remote_id_secret(&self) -> Result<&str, Error> {
        let secret = self
            .remote_id_secret
            .get_or_try_init(|| async {
                let candidate = format!(
                    "{}{}",
                    uuid::Uuid::new_v4().simple(),
                    uuid::Uuid::new_v4().simple()
                );
                let key = keys::remote_id_key(&self.prefix);
                let before: Option<String> = redis::cmd("SET")
                    .arg(&key)
                    .arg(&candidate)
                    .arg("NX")
                    .arg("GET")
                    .query_async(&mut self.conn())
                    .await?;
                Ok::<_, Error>(before.unwrap_or(candidate))
            })
            .await?;
        Ok(secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn two_processes_derive_the_same_ids_and_another_prefix_other_ones() {
        let url = std::env::var("BATON_TEST_REDIS_URL")
            .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
        let prefix = format!("remote-ids-{}", uuid::Uuid::new_v4().simple());
        let one = Store::connect(&url, prefix.clone()).await.unwrap();
        let two = Store::connect(&url, prefix).await.unwrap();
        let other = Store::connect(&url, format!("other-{}", uuid::Uuid::new_v4().simple()))
            .await
            .unwrap();
        let parent = SessionAddress::root("caller");
        let (a, b) = tokio::join!(
            one.remote_child_id(&parent, "call_1"),
            two.remote_child_id(&parent, "call_1")
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a, b, "processes sharing a prefix name the same child");
        assert!(a.starts_with("rc-") && a.len() == 35, "{a}");
        assert_ne!(a, one.remote_child_id(&parent, "call_2").await.unwrap());
        assert_ne!(a, other.remote_child_id(&parent, "call_1").await.unwrap());
        // Without the secret the id is not the bare derivation from the call.
        assert_ne!(a, crate::subagent::remote_child_id("", &parent, "call_1"));
    }
}

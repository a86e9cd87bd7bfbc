//! Whether the store's Redis answers: one `PING` on the shared connection (any node of a
//! cluster), for the server's readiness route.

use super::{Error, Store};

impl Store {
    /// `Ok` once Redis answers a `PING` within the command time-out.
    pub async fn ping(&self) -> Result<(), Error> {
        let mut connection = self.connection.clone();
        let _: String = redis::cmd("PING").query_async(&mut connection).await?;
        Ok(())
    }
}

//! Redis's script cache as the store tests share it: one cache for the whole server, so a test
//! that flushes it (as a Redis restart would) must not run while a test counts round trips, or
//! the count would hold the reload's three requests. A flushing test holds [`flushing`] for its
//! whole length; a counting test holds [`counting`] and loads the scripts it counts first, since
//! a fresh Redis, or one a flushing test emptied, knows none it has not run since.

use super::Store;
use super::scripts::StoreScript;
use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

static SCRIPT_CACHE: RwLock<()> = RwLock::const_new(());

/// Held by a test that flushes the cache: no counting test runs meanwhile.
pub(super) async fn flushing() -> RwLockWriteGuard<'static, ()> {
    SCRIPT_CACHE.write().await
}

/// Held by a test that counts round trips, with `scripts` loaded: none of them is forgotten, so
/// none is sent three times, until the guard is dropped.
pub(super) async fn counting(
    store: &Store,
    scripts: &[&StoreScript],
) -> RwLockReadGuard<'static, ()> {
    let guard = SCRIPT_CACHE.read().await;
    for script in scripts {
        script.load(store).await;
    }
    guard
}

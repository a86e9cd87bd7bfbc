//! Following a session's stream: one shared Redis reader per followed session (`fanout.rs`) and
//! each subscriber's position in it (`follow.rs`), framed by each transport its own way, who
//! may open one more (`admission.rs`), and the revocation that ends one open (`revocation.rs`).

pub mod admission;
pub mod fanout;
pub mod follow;
pub mod revocation;

pub use admission::{Credential, FollowerCaps, FollowerPermit, Followers};
pub use fanout::{Batch, StreamHub};
pub use follow::Follow;

//! Following a session's stream: one shared Redis reader per followed session (`fanout.rs`) and
//! each subscriber's position in it (`follow.rs`), framed by each transport its own way, and
//! who may open one more (`admission.rs`).

pub mod admission;
pub mod fanout;
pub mod follow;

pub use admission::{Credential, FollowerCaps, FollowerPermit, Followers};
pub use fanout::{Batch, StreamHub};
pub use follow::Follow;

//! Baton's gRPC API (`baton.v1`), generated from `proto/baton/v1/baton.proto`, and its
//! conversions to and from baton-core's types. Only this crate and the servers and clients that
//! use it know the wire types; conversions are checked once, in [`convert`].

pub mod convert;
mod meta;
mod search;

#[allow(unreachable_pub, missing_docs, clippy::all)]
pub mod v1 {
    tonic::include_proto!("baton.v1");
}

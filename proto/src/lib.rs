//! Baton's gRPC API (`baton.v1`), generated from `proto/baton/v1/baton.proto`. Only this crate
//! and the server know the wire types; conversions live at the boundary.

#![allow(unreachable_pub, missing_docs, clippy::all)]

pub mod v1 {
    tonic::include_proto!("baton.v1");
}

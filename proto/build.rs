//! Compiles `proto/baton/v1/baton.proto` with the system `protoc` (installed anyway: the
//! Temporal SDK's own protos need it).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_protos(&["proto/baton/v1/baton.proto"], &["proto"])?;
    Ok(())
}

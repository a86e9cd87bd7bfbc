//! The gRPC listener's connection cap: tonic's server has none, so the accept loop is ours. A
//! connection within `--max-grpc-connections`, and within `--max-connections-per-peer` of its
//! client address, goes to the service holding a slot until it closes; one past it is answered, on HTTP/2, with the typed `server_busy` status (its
//! `retryAfter` in the error metadata) for its first call and then closed, so a client is told
//! why instead of finding the server out of file descriptors. A connection past the cap that
//! sends no call in the header deadline is closed.

use crate::peers::{PeerPermit, PeerSlots};
use baton_core::{ApiError, ErrorCode, Refusal};
use baton_proto::convert::status_from_api_error;
use futures::Stream;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::{
    pin::{Pin, pin},
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};
use tokio::{
    io::{AsyncRead, AsyncWrite, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::{OwnedSemaphorePermit, Semaphore},
};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// How long a refused connection is told to wait, in seconds (`retryAfter`).
const BUSY_RETRY_AFTER_SECS: u64 = 1;

/// An accepted connection holding one of the cap's slots and one of its peer's until it is
/// dropped.
pub(super) struct Capped {
    stream: TcpStream,
    _slot: (OwnedSemaphorePermit, PeerPermit),
}

/// The connections of `listener` within `max` open at once, and `per_peer` of one client
/// address (0: no such cap); the others are refused (see the module). Ends only with the
/// listener's task (the server stops polling it on shutdown).
pub(super) fn capped_incoming(
    listener: TcpListener,
    max: usize,
    per_peer: usize,
    busy_deadline: Duration,
) -> impl Stream<Item = std::io::Result<Capped>> {
    let slots = (Arc::new(Semaphore::new(max)), PeerSlots::new(per_peer));
    futures::stream::unfold((listener, slots), move |(listener, slots)| async move {
        loop {
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors, or a connection reset before it was taken: go on.
                    tracing::debug!(%error, "accepting a gRPC connection failed");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            };
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%error, "TCP_NODELAY could not be set");
            }
            let (cap, peers) = &slots;
            // The peer's place first: a peer at its cap takes none of the others'.
            let slot = peers.try_acquire(peer.ip()).and_then(|peer_permit| {
                let slot = cap.clone().try_acquire_owned().ok()?;
                Some((slot, peer_permit))
            });
            match slot {
                Some(slot) => {
                    let capped = Capped {
                        stream,
                        _slot: slot,
                    };
                    return Some((Ok(capped), (listener, slots)));
                }
                None => {
                    tokio::spawn(refuse_busy(stream, busy_deadline));
                }
            }
        }
    })
}

/// The status every call of a connection past the cap gets.
fn busy_status() -> tonic::Status {
    let error = ApiError::new(
        ErrorCode::ServerBusy,
        "the server holds all the gRPC connections it is configured to (in all, or of this \
         client); retry shortly",
    )
    .with(Refusal::RetryAfter {
        retry_after: BUSY_RETRY_AFTER_SECS,
    });
    status_from_api_error(&error)
}

/// Answers the first call of a connection past the cap with [`busy_status`], then closes it
/// (within `deadline` in all).
async fn refuse_busy(stream: TcpStream, deadline: Duration) {
    let (answered_tx, answered_rx) = tokio::sync::watch::channel(false);
    let service = hyper::service::service_fn(move |_request| {
        let _ = answered_tx.send(true);
        async { Ok::<_, std::convert::Infallible>(busy_status().into_http::<tonic::body::Body>()) }
    });
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder.timer(TokioTimer::new());
    let mut connection = pin!(builder.serve_connection(TokioIo::new(stream), service));
    let mut answered = answered_rx;
    let served = async {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::trace!(%error, "a refused gRPC connection ended with an error");
                }
                return;
            }
            _ = answered.wait_for(|answered| *answered) => {}
        }
        // Once the refusal is on its way: GOAWAY, and the connection ends after it.
        connection.as_mut().graceful_shutdown();
        let _ = connection.as_mut().await;
    };
    if tokio::time::timeout(deadline, served).await.is_err() {
        tracing::debug!("a gRPC connection past the cap sent no call in time: closed");
    }
}

impl Connected for Capped {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for Capped {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Capped {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

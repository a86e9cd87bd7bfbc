//! The HTTP server's accept loop, with the limits `axum::serve` does not have: a cap on open
//! connections, in all and per client address (past either a connection is answered 503
//! `server_busy` and closed, so the server answers before it runs out of file descriptors, and
//! one client cannot hold every place) and a deadline for a request's headers (a
//! slow-loris connection that never finishes them is closed). Small writes (SSE events) go out at
//! once: Nagle's algorithm would hold them for the peer's delayed ACK (~40 ms). On shutdown it
//! stops accepting, lets every connection finish its requests, and returns when all have closed.

use super::error::HttpError;
use crate::{
    peers::{PeerPermit, PeerSlots},
    state::ConnectionLimits,
};
use axum::{
    Router,
    body::Body,
    http::{HeaderValue, Request, header::CONNECTION},
    response::{IntoResponse, Response},
};
use baton_core::{ApiError, ErrorCode, Refusal};
use hyper::body::Incoming;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
    service::TowerToHyperService,
};
use std::{future::Future, pin::pin, sync::Arc};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch},
};
use tower::ServiceExt;

/// How long a refused connection is told to wait, in seconds (`Retry-After`).
const BUSY_RETRY_AFTER_SECS: u64 = 1;

/// Serves `app` on `listener` under `limits` until `shutdown` resolves, then drains.
pub(super) async fn serve_connections(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let peers = PeerSlots::new(limits.max_connections_per_peer);
    let busy = Router::new().fallback(|| async { busy() });
    // Each connection holds a sender: when the last is dropped, every connection has closed.
    let (open_tx, mut open_rx) = mpsc::channel::<()>(1);
    let (closing_tx, closing_rx) = watch::channel(false);
    let mut shutdown = pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors, or a connection reset before it was taken: go on.
                    tracing::debug!(%error, "accepting a connection failed");
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY could not be set");
        }
        // The peer's place first: a peer at its cap takes none of the others'.
        let permit = peers.try_acquire(peer.ip()).and_then(|peer_permit| {
            let slot = slots.clone().try_acquire_owned().ok()?;
            Some((slot, peer_permit))
        });
        let service = if permit.is_some() {
            app.clone()
        } else {
            busy.clone()
        };
        tokio::spawn(serve_connection(
            stream,
            service,
            permit,
            limits,
            closing_rx.clone(),
            open_tx.clone(),
        ));
    }
    drop(listener);
    let _ = closing_tx.send(true);
    drop(open_tx);
    // `None` once every connection's sender is gone.
    let _ = open_rx.recv().await;
    Ok(())
}

/// One connection: HTTP/1 (with the header deadline) or HTTP/2, until it closes or, after
/// `closing`, has finished its requests.
async fn serve_connection(
    stream: TcpStream,
    service: Router,
    slot: Option<(OwnedSemaphorePermit, PeerPermit)>,
    limits: ConnectionLimits,
    mut closing: watch::Receiver<bool>,
    _open: mpsc::Sender<()>,
) {
    let service = TowerToHyperService::new(
        service.map_request(|request: Request<Incoming>| request.map(Body::new)),
    );
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder.http2().timer(TokioTimer::new());
    let mut connection =
        pin!(builder.serve_connection_with_upgrades(TokioIo::new(stream), service));
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::trace!(%error, "a connection ended with an error");
            }
        }
        // The one change is to `true`, sent once when the server stops accepting.
        _ = closing.changed() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
    drop(slot);
}

/// The answer of a connection past the cap: 503 `server_busy`, and the connection closes.
fn busy() -> Response {
    let error = ApiError::new(
        ErrorCode::ServerBusy,
        "the server holds all the connections it is configured to (in all, or of this client); \
         retry shortly",
    )
    .with(Refusal::RetryAfter {
        retry_after: BUSY_RETRY_AFTER_SECS,
    });
    let mut response = HttpError::from(error).into_response();
    response
        .headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

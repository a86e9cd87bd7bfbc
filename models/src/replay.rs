//! A local HTTP/1.1 server that replays recorded provider responses byte for byte, for the
//! adapters' tests and the benchmark: no network, no mock of the adapter itself.
//!
//! Each request is recorded (method, path, headers, body) and answered with the next scripted
//! [`Reply`]. A streamed body goes out with chunked transfer encoding, one HTTP chunk per piece,
//! so the client's reads see exactly the piece boundaries the test chose (mid-line, mid-UTF-8,
//! mid-`data:`).

use std::{
    collections::VecDeque,
    net::SocketAddr,
    sync::{Arc, Mutex},
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
    sync::{Notify, mpsc},
};

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names in lower case, in the order sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// The value of header `name` (lower case), if sent once or more (the first).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON; panics if it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// What the server answers to one request.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body, sent as one HTTP chunk per piece.
    pub pieces: Vec<Vec<u8>>,
    /// After the pieces: end the body properly, or keep the connection open until the client
    /// drops it (a model still "thinking"), then signal [`Replay::dropped`].
    pub then: Then,
}

/// How a reply ends after its pieces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// The terminating chunk: the body ends cleanly.
    End,
    /// Close the connection without the terminating chunk: a cut stream.
    Cut,
    /// Send nothing more and wait for the client to go away.
    Hang,
}

impl Reply {
    /// `200 text/event-stream` with `body` cut into `pieces`.
    pub fn stream(pieces: Vec<Vec<u8>>) -> Self {
        Self {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            pieces,
            then: Then::End,
        }
    }

    /// An error status with a JSON body, sent in one piece.
    pub fn error(status: u16, body: &[u8]) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            pieces: vec![body.to_vec()],
            then: Then::End,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn then(mut self, then: Then) -> Self {
        self.then = then;
        self
    }
}

/// A running replay server. It stops when dropped.
pub struct Replay {
    pub address: SocketAddr,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    recorded: mpsc::UnboundedReceiver<Recorded>,
    dropped: Arc<Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Replay {
    /// Starts a server on `127.0.0.1:0` that answers requests with `replies`, in order. A
    /// request beyond them gets a 500.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port is free");
        let address = listener
            .local_addr()
            .expect("a bound listener has an address");
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let dropped = Arc::new(Notify::new());
        let (record, recorded) = mpsc::unbounded_channel();
        let task = tokio::spawn({
            let replies = replies.clone();
            let dropped = dropped.clone();
            async move {
                while let Ok((socket, _)) = listener.accept().await {
                    let _ = socket.set_nodelay(true);
                    tokio::spawn(serve(
                        socket,
                        replies.clone(),
                        record.clone(),
                        dropped.clone(),
                    ));
                }
            }
        });
        Self {
            address,
            replies,
            recorded,
            dropped,
            task,
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Adds replies after the scripted ones.
    pub fn push(&self, reply: Reply) {
        self.replies
            .lock()
            .expect("no panic holds the lock")
            .push_back(reply);
    }

    /// The next request received, waiting for it.
    pub async fn next_request(&mut self) -> Recorded {
        self.recorded.recv().await.expect("the server runs")
    }

    /// Every request received so far, without waiting.
    pub fn requests_so_far(&mut self) -> Vec<Recorded> {
        let mut all = Vec::new();
        while let Ok(request) = self.recorded.try_recv() {
            all.push(request);
        }
        all
    }

    /// Resolves once a client has dropped a connection that a [`Then::Hang`] reply held open.
    pub async fn dropped(&self) {
        self.dropped.notified().await
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    mut socket: TcpStream,
    replies: Arc<Mutex<VecDeque<Reply>>>,
    record: mpsc::UnboundedSender<Recorded>,
    dropped: Arc<Notify>,
) {
    let mut buffer = Vec::new();
    // Keep-alive: one connection may carry several requests.
    while let Some(request) = read_request(&mut socket, &mut buffer).await {
        let _ = record.send(request);
        let reply = replies.lock().expect("no panic holds the lock").pop_front();
        let reply = reply.unwrap_or_else(|| Reply::error(500, b"{\"error\":\"no reply left\"}"));
        if write_reply(&mut socket, &reply).await.is_err() {
            return;
        }
        match reply.then {
            Then::End => {}
            Then::Cut => return,
            Then::Hang => {
                // The client sends nothing more; a read returns when it closes the connection.
                let mut byte = [0u8; 1];
                let _ = socket.read(&mut byte).await;
                dropped.notify_one();
                return;
            }
        }
    }
}

async fn write_reply(socket: &mut TcpStream, reply: &Reply) -> std::io::Result<()> {
    write_head(socket, reply.status, &reply.headers).await?;
    for piece in &reply.pieces {
        write_chunk(socket, piece).await?;
    }
    if reply.then == Then::End {
        socket.write_all(b"0\r\n\r\n").await?;
    }
    socket.flush().await
}

/// Writes a response head for a chunked body.
pub async fn write_head(
    socket: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
) -> std::io::Result<()> {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\n\r\n");
    socket.write_all(head.as_bytes()).await
}

/// Writes `piece` as one HTTP chunk and flushes it (an empty piece is skipped: it would end the
/// body).
pub async fn write_chunk(socket: &mut TcpStream, piece: &[u8]) -> std::io::Result<()> {
    if piece.is_empty() {
        return Ok(());
    }
    let mut chunk = format!("{:x}\r\n", piece.len()).into_bytes();
    chunk.extend_from_slice(piece);
    chunk.extend_from_slice(b"\r\n");
    socket.write_all(&chunk).await?;
    socket.flush().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Reads one request (head and `content-length` body) from `socket`, keeping in `buffer` what
/// arrived beyond it; `None` when the client closed.
pub async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Recorded> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let mut chunk = [0u8; 8192];
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        let mut chunk = [0u8; 8192];
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let body = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

/// Cuts a recorded body at the places a network is most likely to trip a parser: inside every
/// `data:` field name, after the first byte of every multi-byte UTF-8 character, and between
/// the two newlines that end an event.
pub fn split_awkwardly(body: &[u8]) -> Vec<Vec<u8>> {
    let mut cuts = Vec::new();
    for (at, window) in body.windows(5).enumerate() {
        if window == b"data:" {
            cuts.push(at + 3);
        }
    }
    for (at, byte) in body.iter().enumerate() {
        // A lead byte of a multi-byte character: 11xxxxxx.
        if byte & 0b1100_0000 == 0b1100_0000 {
            cuts.push(at + 1);
        }
    }
    for (at, window) in body.windows(2).enumerate() {
        if window == b"\n\n" {
            cuts.push(at + 1);
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        if cut > start && cut < body.len() {
            pieces.push(body[start..cut].to_vec());
            start = cut;
        }
    }
    pieces.push(body[start..].to_vec());
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awkward_pieces_join_back_to_the_body() {
        let body = "data: {\"t\":\"é🎉\"}\n\ndata: [DONE]\n\n".as_bytes();
        let pieces = split_awkwardly(body);
        assert_eq!(pieces.concat(), body);
        let expected: [&[u8]; 7] = [
            b"dat",
            b"a: {\"t\":\"\xC3",
            b"\xA9\xF0",
            b"\x9F\x8E\x89\"}\n",
            b"\ndat",
            b"a: [DONE]\n",
            b"\n",
        ];
        assert_eq!(pieces, expected);
    }
}

//! Responses: whole small ones, and answers streamed from a blocking
//! search through a bounded channel.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::Frame;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

pub type Response = hyper::Response<BoxBody<Bytes, Infallible>>;

/// Bytes gathered before a chunk is sent.
const CHUNK: usize = 64 << 10;

/// Chunks in flight between a search and its client: with [`CHUNK`], the
/// most an answer holds in memory.
const IN_FLIGHT: usize = 4;

/// A whole response with a text body.
pub fn text(status: u16, body: &str) -> Response {
    whole(
        status,
        "text/plain; charset=utf-8",
        body.as_bytes().to_vec(),
        &[],
    )
}

/// A whole response.
pub fn whole(status: u16, content_type: &str, body: Vec<u8>, headers: &[(&str, &str)]) -> Response {
    let mut res = hyper::Response::builder()
        .status(status)
        .header("Content-Type", content_type);
    for (k, v) in headers {
        res = res.header(*k, *v);
    }
    res.body(Full::new(Bytes::from(body)).boxed())
        .unwrap_or_else(|_| internal())
}

fn internal() -> Response {
    let mut res = hyper::Response::new(Full::new(Bytes::from_static(b"internal error\n")).boxed());
    *res.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
    res
}

/// Answers a connection over the limit with 503 and closes it.
pub async fn refuse(mut stream: tokio::net::TcpStream) {
    let body = "too many connections; try again\n";
    let msg = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\nRetry-After: 1\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), async {
        let _ = stream.write_all(msg.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// How an answer starts: its status, content type and extra headers, or
/// a whole error response.
pub enum Head {
    Ok {
        content_type: String,
        headers: Vec<(String, String)>,
    },
    /// A whole error response: status, content type, body.
    Fail(u16, String, Vec<u8>),
    /// A whole error response with headers of its own (a 416 names the
    /// representation's length in `Content-Range`, RFC 9110 15.5.17).
    FailWith {
        status: u16,
        content_type: String,
        body: Vec<u8>,
        headers: Vec<(String, String)>,
    },
}

impl Head {
    /// The whole response this head starts, with `body` (a failure has
    /// its own).
    fn whole(self, body: Vec<u8>) -> Response {
        let (status, content_type, body, headers) = match self {
            Head::Fail(status, content_type, own) => (status, content_type, own, Vec::new()),
            Head::FailWith {
                status,
                content_type,
                body: own,
                headers,
            } => (status, content_type, own, headers),
            Head::Ok {
                content_type,
                headers,
            } => (200, content_type, body, headers),
        };
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        whole(status, &content_type, body, &headers)
    }

    fn is_failure(&self) -> bool {
        !matches!(self, Head::Ok { .. })
    }
}

/// What the search's thread sends first: the head of a streamed
/// answer (its chunks follow on the channel), or a whole answer.
enum Start {
    Head(Head),
    Whole(Head, Vec<u8>),
}

/// The writing end of an answer: streamed from a search's thread, or
/// gathered whole on the connection's thread (see [`stream_held`]).
pub struct Sink {
    to: To,
    /// Grown as written: most answers are a few lines, and a buffer of a
    /// chunk's size per request cost an allocation (and its free a
    /// consolidation of the allocator's heap) per lookup.
    buf: Vec<u8>,
    started: bool,
    /// The client went away, or a gathered answer outgrew a chunk: stop
    /// searching.
    gone: bool,
}

enum To {
    Client {
        head: Option<oneshot::Sender<Start>>,
        /// The answer's head, started and not yet sent: it goes with the
        /// first chunk, or with the whole body at the end.
        pending: Option<Head>,
        body: mpsc::Sender<Bytes>,
    },
    /// A try on the connection's thread: the head kept, the body
    /// gathered in `buf`, up to a chunk.
    Here { head: Option<Head> },
}

impl Sink {
    /// Starts the answer (once); later calls do nothing. A failure goes
    /// out at once; a success with the first chunk or at the end.
    pub fn start(&mut self, head: Head) {
        if std::mem::replace(&mut self.started, true) {
            return;
        }
        match &mut self.to {
            To::Client {
                head: tx, pending, ..
            } => match head.is_failure() {
                true => {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(Start::Head(head));
                    }
                }
                false => *pending = Some(head),
            },
            To::Here { head: kept } => *kept = Some(head),
        }
    }

    pub fn is_started(&self) -> bool {
        self.started
    }

    /// Whether nothing more needs writing: the client is gone, or this
    /// answer is being tried on the connection's thread and will be
    /// made again elsewhere (a block was not held, or it is too long).
    pub fn is_gone(&self) -> bool {
        self.gone || matches!(self.to, To::Here { .. }) && ukvs::engine::blocks::is_refused()
    }

    fn send(&mut self) {
        if self.buf.is_empty() || self.gone {
            return;
        }
        match &mut self.to {
            To::Client {
                head: tx,
                pending,
                body,
            } => {
                if let (Some(head), Some(tx)) = (pending.take(), tx.take()) {
                    if tx.send(Start::Head(head)).is_err() {
                        self.gone = true;
                        return;
                    }
                }
                let chunk = Bytes::from(std::mem::take(&mut self.buf));
                if body.blocking_send(chunk).is_err() {
                    self.gone = true;
                }
            }
            // Too long to gather: made again as a stream.
            To::Here { .. } => self.gone = true,
        }
    }

    /// Ends the answer: whole when nothing of it was sent yet.
    pub fn finish(mut self) {
        if let To::Client {
            head: tx, pending, ..
        } = &mut self.to
        {
            if let (Some(head), Some(tx)) = (pending.take(), tx.take()) {
                let _ = tx.send(Start::Whole(head, std::mem::take(&mut self.buf)));
                return;
            }
            self.send();
        }
    }

    /// The answer gathered here, if it was made whole.
    fn gathered(self) -> Option<Response> {
        let To::Here { head } = self.to else {
            return None;
        };
        if self.gone {
            return None;
        }
        let head = head.unwrap_or(Head::Ok {
            content_type: "text/plain".into(),
            headers: Vec::new(),
        });
        Some(head.whole(self.buf))
    }
}

impl std::io::Write for Sink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.is_gone() {
            return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send();
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `produce` on a search thread ([`ukvs::engine::searches`]) and
/// answers with what it starts and writes. `produce` must call [`Sink::start`] before writing; if it
/// returns without starting, the answer is an empty 200 of `text/plain`.
/// An answer that ends before it fills a chunk (an exact lookup's) goes
/// out whole, with its length, in one message from the search's thread;
/// a longer one streams.
pub async fn stream(produce: impl FnOnce(&mut Sink) + Send + 'static) -> Response {
    let (head_tx, head_rx) = oneshot::channel();
    let (body_tx, body_rx) = mpsc::channel::<Bytes>(IN_FLIGHT);
    let search = move || {
        let mut sink = Sink {
            to: To::Client {
                head: Some(head_tx),
                pending: None,
                body: body_tx,
            },
            buf: Vec::new(),
            started: false,
            gone: false,
        };
        produce(&mut sink);
        sink.start(Head::Ok {
            content_type: "text/plain".into(),
            headers: Vec::new(),
        });
        sink.finish();
    };
    // On the server's search threads; on tokio's blocking pool when all
    // of them are busy.
    let task = ukvs::engine::searches::try_spawn(search)
        .err()
        .map(tokio::task::spawn_blocking);
    let start = match head_rx.await {
        Ok(h) => h,
        Err(_) => {
            // The search panicked before it started the answer.
            if let Some(task) = task {
                let _ = task.await;
            }
            return text(500, "internal error\n");
        }
    };
    let head = match start {
        Start::Whole(head, body) => return head.whole(body),
        Start::Head(head) => head,
    };
    match head {
        fail @ (Head::Fail(..) | Head::FailWith { .. }) => fail.whole(Vec::new()),
        Head::Ok {
            content_type,
            headers,
        } => {
            let frames = tokio_stream::wrappers::ReceiverStream::new(body_rx);
            let frames =
                tokio_stream::StreamExt::map(frames, |b| Ok::<_, Infallible>(Frame::data(b)));
            let mut res = hyper::Response::builder()
                .status(200)
                .header("Content-Type", content_type);
            for (k, v) in &headers {
                res = res.header(k, v);
            }
            res.body(BodyExt::boxed(StreamBody::new(frames)))
                .unwrap_or_else(|_| internal())
        }
    }
}

/// Answers as [`stream`] does, but when `here` first makes the answer on
/// the connection's thread with every read of a block refused
/// ([`held_only`](ukvs::engine::blocks::held_only)): an answer the block
/// cache holds, and shorter than a chunk, is sent whole at once, and the
/// search never waits for a thread to take it (on a busy machine each
/// hand-over between threads waits its turn for a core, and a lookup
/// answered from memory takes microseconds). Any other is made again
/// from the start on a search thread, as [`stream`] makes it. `here`
/// is for searches that read nothing but blocks and memory (ZipNum
/// clusters): the connection's thread must not wait on a disk.
pub async fn stream_held(
    here: bool,
    mut produce: impl FnMut(&mut Sink) + Send + 'static,
) -> Response {
    if here && ukvs::engine::blocks::cache().is_on() {
        let mut sink = Sink {
            to: To::Here { head: None },
            buf: Vec::new(),
            started: false,
            gone: false,
        };
        // A panic here is not the connection's: the answer is made again
        // on a search thread, which answers 500 if it panics there too.
        let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ukvs::engine::blocks::held_only(|| produce(&mut sink))
        }));
        if let Some(res) = made.ok().flatten().and_then(|()| sink.gathered()) {
            return res;
        }
    }
    stream(produce).await
}

/// Marks a response sent as it is whatever the client accepts (the
/// Wayback API's `gzip=false`).
#[derive(Clone, Copy, Debug)]
pub struct Identity;

/// Sends `res` uncompressed.
pub fn identity(res: &mut Response) {
    res.extensions_mut().insert(Identity);
}

/// Whether a request's `Accept-Encoding` takes gzip (`gzip`, `x-gzip` or
/// `*`, with a q-value above 0).
pub fn accepts_gzip(headers: &hyper::HeaderMap) -> bool {
    headers
        .get_all(hyper::header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|item| {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts.any(|p| {
                let p = p.trim();
                p.strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            matches!(name.as_str(), "gzip" | "x-gzip" | "*") && !refused
        })
}

/// Gzip level of compressed answers: the fastest, so that compressing
/// keeps up with a search (a level-6 stream costs several times more CPU
/// for a few percent of size on index lines).
const GZIP_LEVEL: u32 = 1;

/// `res` gzip-compressed as it streams (each chunk compressed and flushed
/// as it comes, so memory stays that of one chunk and the compressor's
/// window), unless it is marked [`Identity`], has no body to compress or
/// is encoded already.
pub fn gzip(res: Response) -> Response {
    let status = res.status().as_u16();
    if res.extensions().get::<Identity>().is_some()
        || res.headers().contains_key(hyper::header::CONTENT_ENCODING)
        || status == 204
        || status == 304
    {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    parts.headers.remove(hyper::header::CONTENT_LENGTH);
    parts.headers.insert(
        hyper::header::CONTENT_ENCODING,
        hyper::header::HeaderValue::from_static("gzip"),
    );
    parts.headers.append(
        hyper::header::VARY,
        hyper::header::HeaderValue::from_static("Accept-Encoding"),
    );
    let enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(GZIP_LEVEL));
    let body = GzBody {
        inner: body,
        enc: Some(enc),
    };
    hyper::Response::from_parts(parts, BodyExt::boxed(body))
}

/// A body compressed on its way out.
struct GzBody {
    inner: BoxBody<Bytes, Infallible>,
    /// `None` once the gzip trailer is sent.
    enc: Option<flate2::write::GzEncoder<Vec<u8>>>,
}

impl hyper::body::Body for GzBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        use std::io::Write;
        use std::task::Poll;
        let this = &mut *self;
        loop {
            let Some(enc) = this.enc.as_mut() else {
                return Poll::Ready(None);
            };
            match std::pin::Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(frame))) => {
                    // Trailers are not sent: an answer has none.
                    let Ok(data) = frame.into_data() else {
                        continue;
                    };
                    // Writes into a Vec cannot fail.
                    let _ = enc.write_all(&data);
                    let _ = enc.flush();
                    let out = std::mem::take(enc.get_mut());
                    if !out.is_empty() {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                    }
                }
                Poll::Ready(Some(Err(e))) => match e {},
                Poll::Ready(None) => {
                    let out = this
                        .enc
                        .take()
                        .map(|e| e.finish().unwrap_or_default())
                        .unwrap_or_default();
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.enc.is_none()
    }
}

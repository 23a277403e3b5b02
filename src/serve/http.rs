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
    Fail(u16, String, Vec<u8>),
}

/// The writing end of a streamed answer, used on a blocking thread.
pub struct Sink {
    head: Option<oneshot::Sender<Head>>,
    body: mpsc::Sender<Bytes>,
    buf: Vec<u8>,
    /// The client went away: stop searching.
    gone: bool,
}

impl Sink {
    /// Starts the answer (once); later calls do nothing.
    pub fn start(&mut self, head: Head) {
        if let Some(tx) = self.head.take() {
            let _ = tx.send(head);
        }
    }

    pub fn is_started(&self) -> bool {
        self.head.is_none()
    }

    /// Whether the client is gone (nothing more needs writing).
    pub fn is_gone(&self) -> bool {
        self.gone
    }

    fn send(&mut self) {
        if self.buf.is_empty() || self.gone {
            return;
        }
        let chunk = Bytes::from(std::mem::take(&mut self.buf));
        if self.body.blocking_send(chunk).is_err() {
            self.gone = true;
        }
    }

    /// Ends the answer.
    pub fn finish(mut self) {
        self.send();
    }
}

impl std::io::Write for Sink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.gone {
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

/// Runs `produce` on a blocking thread and answers with what it starts
/// and writes. `produce` must call [`Sink::start`] before writing; if it
/// returns without starting, the answer is an empty 200 of `text/plain`.
pub async fn stream(produce: impl FnOnce(&mut Sink) + Send + 'static) -> Response {
    let (head_tx, head_rx) = oneshot::channel();
    let (body_tx, body_rx) = mpsc::channel::<Bytes>(IN_FLIGHT);
    let task = tokio::task::spawn_blocking(move || {
        let mut sink = Sink {
            head: Some(head_tx),
            body: body_tx,
            buf: Vec::with_capacity(CHUNK),
            gone: false,
        };
        produce(&mut sink);
        sink.start(Head::Ok {
            content_type: "text/plain".into(),
            headers: Vec::new(),
        });
        sink.finish();
    });
    let head = match head_rx.await {
        Ok(h) => h,
        Err(_) => {
            // The search panicked before it started the answer.
            let _ = task.await;
            return text(500, "internal error\n");
        }
    };
    match head {
        Head::Fail(status, content_type, body) => whole(status, &content_type, body, &[]),
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

//! Response bodies: whole buffers, or a channel for watch streams.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt;
use tokio::sync::mpsc;

/// The body of every response.
pub type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// A whole body.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(bytes.into()).boxed()
}

/// An empty body.
pub fn empty() -> Body {
    http_body_util::Empty::new().boxed()
}

/// A streamed body fed by `rx`, each message a batch of chunks sent in order (shared
/// buffers: a watch event's frame is one buffer for all its watchers, never copied into
/// a per-watcher one); it ends when the sender is dropped.
pub fn channel(rx: mpsc::Receiver<Vec<Bytes>>) -> Body {
    ChannelBody {
        rx,
        pending: std::collections::VecDeque::new(),
    }
    .boxed()
}

struct ChannelBody {
    rx: mpsc::Receiver<Vec<Bytes>>,
    pending: std::collections::VecDeque<Bytes>,
}

impl HttpBody for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Poll::Ready(Some(Ok(Frame::data(b))));
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(batch)) => self.pending.extend(batch),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

//! hyper answers some malformed HTTP/1 requests itself, before any service runs: a request
//! line longer than its URI limit (414) or a head larger than its buffer (431), both with
//! an empty body. Clients of a Kubernetes API expect a `Status` body on every error, so
//! this transport wrapper recognises exactly those answers on their way out and writes
//! them with a `Status` body instead. Nothing else passes through it changed.
//!
//! Why a transport wrapper: hyper has no hook for its parse-error responses, and its URI
//! limit cannot be configured.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use wasmgate_apimachinery::status::Status;

/// A transport whose hyper-generated 414 and 431 answers get a `Status` body.
pub(crate) struct ErrorBodyIo<T> {
    inner: T,
    /// A rewritten answer being written: its bytes, how many are out, and the length of
    /// the original buffer to report once all are.
    pending: Option<(Vec<u8>, usize, usize)>,
}

impl<T> ErrorBodyIo<T> {
    pub(crate) fn new(inner: T) -> Self {
        ErrorBodyIo {
            inner,
            pending: None,
        }
    }
}

/// The replacement for a bodiless 414 or 431 head that hyper wrote, if `buf` is one.
fn rewrite(buf: &[u8]) -> Option<Vec<u8>> {
    if buf.len() > 512 || !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    let (code, message) = if buf.starts_with(b"HTTP/1.1 414 ") {
        (
            414,
            "Request-URI Too Long: the request line is longer than the server accepts",
        )
    } else if buf.starts_with(b"HTTP/1.1 431 ") {
        (
            431,
            "Request Header Fields Too Large: the request headers are larger than the server accepts",
        )
    } else {
        return None;
    };
    let head = String::from_utf8_lossy(buf).to_ascii_lowercase();
    if !head.contains("\r\ncontent-length: 0\r\n") {
        return None;
    }
    let body = Status::failure(code, "BadRequest", message).to_json();
    let status_line = &buf[..buf.iter().position(|b| *b == b'\r')?];
    let mut out = Vec::with_capacity(256 + body.len());
    out.extend_from_slice(status_line);
    out.extend_from_slice(b"\r\ncontent-type: application/json\r\nconnection: close\r\n");
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(&body);
    Some(out)
}

impl<T: AsyncRead + Unpin> AsyncRead for ErrorBodyIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ErrorBodyIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.pending.is_none() {
            match rewrite(buf) {
                Some(bytes) => this.pending = Some((bytes, 0, buf.len())),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        let Some((bytes, written, original)) = this.pending.as_mut() else {
            return Poll::Ready(Ok(0));
        };
        while *written < bytes.len() {
            match Pin::new(&mut this.inner).poll_write(cx, &bytes[*written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        let original = *original;
        this.pending = None;
        Poll::Ready(Ok(original))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        // hyper writes its bodiless error heads as one buffer; everything else goes to
        // the transport's own vectored write (TLS streams batch them into records).
        let first = bufs.iter().find(|b| !b.is_empty());
        if self.pending.is_some() || first.is_some_and(|b| rewrite(b).is_some()) {
            let first = first.map_or(&[][..], |b| &b[..]);
            return self.poll_write(cx, first);
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bodiless_414_and_431_heads_are_rewritten() {
        let head = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = String::from_utf8(rewrite(head).unwrap()).unwrap();
        assert!(out.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        let body = out.split("\r\n\r\n").nth(1).unwrap();
        let status: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(
            (status["kind"].as_str(), status["code"].as_u64()),
            (Some("Status"), Some(431))
        );
        assert!(out.contains(&format!("content-length: {}\r\n", body.len())));
        assert!(rewrite(b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\n\r\n").is_some());
        // Our own answers carry bodies; other codes pass.
        assert!(rewrite(b"HTTP/1.1 431 X\r\ncontent-length: 90\r\n\r\n").is_none());
        assert!(rewrite(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(rewrite(b"{\"kind\":\"Status\"}").is_none());
    }
}

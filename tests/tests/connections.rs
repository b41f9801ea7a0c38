//! Connections without credentials cannot lock anyone out (ISSUE-24.2, ISSUE-24.3).
//!
//! kube-apiserver has no global cap on connections: each has its own deadlines. Wasmgate
//! keeps at most `max-unauthenticated-connections` idle ones and closes the oldest idle one
//! for a newcomer, so a client that brings a certificate or a token always gets in; a
//! connection that has not sent a request within `header-read-timeout-seconds` of being
//! accepted is closed whatever it is doing; and a connection that carried a request with a
//! valid bearer token is authenticated, like one with a client certificate.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmgate_e2e::{Gateway, gateway_builder};

type Tls = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

fn tcp(gw: &Gateway) -> TcpStream {
    let s = TcpStream::connect(gw.addr()).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    s
}

/// A TLS connection without a client certificate, its handshake completed.
fn tls(gw: &Gateway, config: &Arc<rustls::ClientConfig>) -> Tls {
    let conn =
        rustls::ClientConnection::new(config.clone(), "localhost".try_into().expect("server name"))
            .expect("tls");
    let mut s = rustls::StreamOwned::new(conn, tcp(gw));
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).expect("handshake");
    }
    s
}

/// Whether the server closed `s` (or reset it) within `limit`.
fn closed_within(s: &mut impl std::io::Read, limit: Duration) -> bool {
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    while start.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return true,
            Ok(_) => {}
        }
    }
    false
}

/// Reads the response head of `s` (up to the blank line).
fn head(s: &mut Tls) -> String {
    let mut got = Vec::new();
    let mut byte = [0u8; 1];
    while !got.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => got.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// ISSUE-24.2: a connection that completed its TLS handshake and then sends nothing is
/// closed at the header-read timeout, counted from when it was accepted.
#[test]
fn an_idle_tls_connection_without_a_request_is_closed_at_the_header_timeout() {
    let gw = gateway_builder!()
        .config("limits:\n  header-read-timeout-seconds: 2\n")
        .start();
    let config = gw.tls_config_without_certificate();
    let mut idle = tls(&gw, &config);
    idle.sock
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let start = Instant::now();
    assert!(
        closed_within(&mut idle, Duration::from_secs(20)),
        "an established connection without a request stayed open"
    );
    assert!(start.elapsed() < Duration::from_secs(15));
    // One that sends a request in time is served.
    let mut served = tls(&gw, &config);
    served
        .write_all(b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .expect("write");
    assert!(head(&mut served).starts_with("HTTP/1.1 200"));
}

/// ISSUE-24.2 (and GAP-06's 10,000 creates with kubectl): an HTTP/2 connection that
/// opened and sent no request is told to go with a GOAWAY at the header-read timeout
/// before it is closed, so a client that sends a request on it just then (Go's HTTP/2
/// client may hold a connection it dialled and has not used) retries it instead of
/// failing with an unexpected EOF.
#[test]
fn an_idle_http2_connection_gets_a_goaway_before_it_is_closed() {
    let gw = gateway_builder!()
        .config("limits:\n  header-read-timeout-seconds: 2\n")
        .start();
    let mut config = (*gw.tls_config_without_certificate()).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let mut conn = tls(&gw, &Arc::new(config));
    assert_eq!(conn.conn.alpn_protocol(), Some(&b"h2"[..]));
    // The client preface and an empty SETTINGS frame: an HTTP/2 connection, no stream.
    conn.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .expect("preface");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    assert!(start.elapsed() < Duration::from_secs(15), "closed in time");
    // Frames: 3 bytes of length, a type, flags, 4 bytes of stream id, the payload.
    let mut types = Vec::new();
    let mut rest = &got[..];
    while rest.len() >= 9 {
        let len = usize::from(rest[0]) << 16 | usize::from(rest[1]) << 8 | usize::from(rest[2]);
        types.push(rest[3]);
        rest = &rest[(9 + len).min(rest.len())..];
    }
    assert!(
        types.contains(&7),
        "no GOAWAY (type 7) before the close; frame types: {types:?}"
    );
}

/// ISSUE-24.2: with the pool of unauthenticated connections full of idle TLS connections
/// and raw sockets that never start a handshake, the admin's certificate and fresh
/// connections still get in at once: the oldest idle ones make room.
#[test]
fn idle_unauthenticated_connections_never_lock_out_a_client_with_credentials() {
    const CAP: usize = 16;
    let gw = gateway_builder!()
        .config(&format!(
            "limits:\n  max-unauthenticated-connections: {CAP}\n"
        ))
        .start();
    let config = gw.tls_config_without_certificate();
    let mut idle_tls: Vec<Tls> = (0..CAP).map(|_| tls(&gw, &config)).collect();
    let raw: Vec<TcpStream> = (0..CAP).map(|_| tcp(&gw)).collect();
    std::thread::sleep(Duration::from_millis(300));
    let client = gw.client();
    for _ in 0..5 {
        let start = Instant::now();
        client.get("/api/v1/namespaces").expect_status(200);
        eprintln!(
            "admin request with {} idle sockets held: {:?}",
            idle_tls.len() + raw.len(),
            start.elapsed()
        );
    }
    gw.kubectl_ok(&["get", "ns"]);
    // Anonymous clients are not refused either: each newcomer gets a place.
    let mut anonymous = tls(&gw, &config);
    anonymous
        .write_all(b"GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .expect("write");
    assert!(head(&mut anonymous).starts_with("HTTP/1.1 200"));
    // The oldest idle ones made room: the TLS connections opened first.
    for (i, s) in idle_tls.iter_mut().enumerate() {
        s.sock
            .set_read_timeout(Some(Duration::from_millis(500)))
            .expect("timeout");
        assert!(
            closed_within(s, Duration::from_secs(2)),
            "idle connection {i} (among the oldest) is still open"
        );
    }
    drop(raw);
}

/// ISSUE-24.3: a token user's watches over HTTP/1.1 (one connection each) are all
/// answered, far past the cap of unauthenticated connections, and other users' fresh
/// connections are served while they are open.
#[test]
fn bearer_token_connections_are_authenticated_connections() {
    const CAP: usize = 16;
    const WATCHES: usize = 200;
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "watcher-token,watcher,w1\nother-token,other,o1\n").expect("tokens");
    let gw = gateway_builder!()
        .config(&format!(
            "token-auth-file: {}\nlimits:\n  max-unauthenticated-connections: {CAP}\n",
            tokens.display()
        ))
        .start();
    gw.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "watchers",
        "--clusterrole=view",
        "--user=watcher",
        "--user=other",
    ]);
    let config = gw.tls_config_without_certificate();
    let started = Instant::now();
    let mut watches: Vec<Tls> = (0..WATCHES)
        .map(|_| {
            let mut s = tls(&gw, &config);
            s.write_all(
                b"GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\n\
                  Host: localhost\r\nAuthorization: Bearer watcher-token\r\n\r\n",
            )
            .expect("write");
            s
        })
        .collect();
    for (i, w) in watches.iter_mut().enumerate() {
        let h = head(w);
        assert!(h.starts_with("HTTP/1.1 200"), "watch {i}: {h:?}");
    }
    eprintln!(
        "{WATCHES} token watches answered in {:?}",
        started.elapsed()
    );
    // While they are open: the admin, and another token user on fresh connections.
    let start = Instant::now();
    gw.client().get("/api/v1/namespaces").expect_status(200);
    eprintln!("admin request beside them: {:?}", start.elapsed());
    let mut other = tls(&gw, &config);
    let start = Instant::now();
    other
        .write_all(
            b"GET /api/v1/namespaces HTTP/1.1\r\nHost: localhost\r\n\
              Authorization: Bearer other-token\r\n\r\n",
        )
        .expect("write");
    let h = head(&mut other);
    assert!(h.starts_with("HTTP/1.1 200"), "{h:?}");
    eprintln!("other user's request beside them: {:?}", start.elapsed());
    // And every watch still delivers.
    gw.kubectl_ok(&["create", "configmap", "seen"]);
    for (i, w) in watches.iter_mut().enumerate() {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains("\"seen\"") {
            let n = w.read(&mut buf).unwrap_or(0);
            assert!(n > 0, "watch {i} ended");
            got.extend_from_slice(&buf[..n]);
        }
    }
}

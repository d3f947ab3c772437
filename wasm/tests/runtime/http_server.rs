//! A tiny HTTP/1.1 server on 127.0.0.1 for the outbound-HTTP tests: fixed routes, records what
//! it was asked, one request per connection. It answers after the request head without reading
//! a body, as some real servers do. Dropping it stops the accept loop.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// One request the server saw.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) authorization: Option<String>,
}

pub(crate) struct TestServer {
    pub(crate) port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    accept: JoinHandle<()>,
}

impl TestServer {
    /// Serves `/ok` (200 `fine`), `/hooks/…` (200 `sent`), `/big` (200, 64 KiB),
    /// `/redirect?to=URL` (302 to URL), and slow answers: `/silent` (nothing for 20 s),
    /// `/stall` (a head and 10 of 100 body bytes, then nothing for 20 s), `/drip` (1 000 body
    /// bytes, one every 300 ms), `/chunks` (four chunks of a chunked body 40 ms apart, then the
    /// trailer `x-digest: sha256=5e1f`); anything else is 404.
    pub(crate) async fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind test server");
        let port = listener.local_addr().expect("address").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let accept = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let record = Arc::clone(&record);
                tokio::spawn(async move {
                    let Some(head) = read_head(&mut stream).await else { return };
                    let request = parse(&head);
                    let path = request.path.clone();
                    record.lock().expect("lock").push(request);
                    if slow(&path, &mut stream).await {
                        return;
                    }
                    let _ = stream.write_all(&respond(&path)).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        TestServer { port, seen, accept }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Answers the slow routes; false for every other path. Each ends by itself within 20 s (or
/// when the client goes away).
async fn slow(path: &str, stream: &mut tokio::net::TcpStream) -> bool {
    let pause = std::time::Duration::from_secs(20);
    match path {
        "/silent" => tokio::time::sleep(pause).await,
        "/stall" => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n0123456789").await;
            tokio::time::sleep(pause).await;
        }
        "/drip" => {
            if stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n").await.is_err() {
                return true;
            }
            for _ in 0..1000 {
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                if stream.write_all(b"x").await.is_err() {
                    break;
                }
            }
        }
        "/chunks" => {
            let head = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntrailer: x-digest\r\nconnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return true;
            }
            for chunk in ["alpha ", "bravo charlie ", "delta ", "echo foxtrot golf"] {
                tokio::time::sleep(std::time::Duration::from_millis(40)).await;
                let framed = format!("{:x}\r\n{chunk}\r\n", chunk.len());
                if stream.write_all(framed.as_bytes()).await.is_err() {
                    return true;
                }
            }
            let _ = stream.write_all(b"0\r\nx-digest: sha256=5e1f\r\n\r\n").await;
            let _ = stream.shutdown().await;
        }
        _ => return false,
    }
    true
}

/// Reads up to the blank line ending the head (bounded: 64 KiB).
async fn read_head(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() > 64 << 10 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

fn parse(head: &str) -> Seen {
    let mut lines = head.lines();
    let path = lines.next().and_then(|line| line.split_whitespace().nth(1)).unwrap_or("/").to_owned();
    let authorization = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        .map(|(_, value)| value.trim().to_owned());
    Seen { path, authorization }
}

fn respond(path: &str) -> Vec<u8> {
    let (status, headers, body) = match path.split_once('?').map_or((path, ""), |(p, q)| (p, q)) {
        ("/ok", _) => ("200 OK", String::new(), b"fine".to_vec()),
        // A webhook-style path with a key in it.
        (hook, _) if hook.starts_with("/hooks/") => ("200 OK", String::new(), b"sent".to_vec()),
        ("/big", _) => ("200 OK", String::new(), vec![b'x'; 64 << 10]),
        ("/redirect", query) => {
            let to = query.strip_prefix("to=").unwrap_or("/ok");
            ("302 Found", format!("location: {to}\r\n"), Vec::new())
        }
        _ => ("404 Not Found", String::new(), b"no such route".to_vec()),
    };
    let mut response =
        format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n", body.len())
            .into_bytes();
    response.extend_from_slice(&body);
    response
}

/// A port on 127.0.0.1 that nothing listens on (bound, then closed).
pub(crate) fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

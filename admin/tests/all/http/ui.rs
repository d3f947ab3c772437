//! The web UI's files served from the binary: media types, caching and security headers on
//! every answer, 404 for unknown files, and no way out of the embedded set by path tricks.

use std::sync::Arc;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::http::{Admin, RecordingCore, sqlite_url, test_config};

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

async fn start() -> anyhow::Result<(tempfile::TempDir, Admin)> {
    let dir = tempfile::tempdir()?;
    let admin =
        Admin::start(test_config(&sqlite_url(dir.path())), Arc::new(RecordingCore::default())).await?;
    Ok((dir, admin))
}

fn assert_secured(response: &reqwest::Response) {
    let headers = response.headers();
    let url = response.url().path();
    assert_eq!(headers["content-security-policy"], CSP, "{url}");
    assert_eq!(headers["x-content-type-options"], "nosniff", "{url}");
    assert_eq!(headers["x-frame-options"], "DENY", "{url}");
}

#[tokio::test]
async fn ui_files_have_their_media_type_and_security_headers() -> anyhow::Result<()> {
    let (_dir, admin) = start().await?;
    let cases = [
        ("/", "text/html; charset=utf-8", "<script type=\"module\" src=\"/ui/js/app.js\">"),
        ("/ui/index.html", "text/html; charset=utf-8", "<div id=\"app\">"),
        ("/ui/js/app.js", "text/javascript; charset=utf-8", "import"),
        ("/ui/js/i18n/zh_CN.js", "text/javascript; charset=utf-8", "任务管理"),
        ("/ui/css/app.css", "text/css; charset=utf-8", ".topbar"),
        ("/ui/vendor/chartjs/chart.umd.js", "text/javascript; charset=utf-8", "Chart.js v4"),
        ("/ui/vendor/codemirror/codemirror.css", "text/css; charset=utf-8", ".CodeMirror"),
        ("/ui/vendor/codemirror/mode/shell.js", "text/javascript; charset=utf-8", "defineMode"),
        ("/ui/vendor/codemirror/LICENSE", "text/plain; charset=utf-8", "MIT"),
    ];
    for (path, content_type, needle) in cases {
        let response = admin.http.get(admin.url(path)).send().await?;
        assert_eq!(response.status(), 200, "{path}");
        assert_secured(&response);
        assert_eq!(response.headers()["content-type"], content_type, "{path}");
        assert_eq!(response.headers()["cache-control"], "no-cache", "{path}");
        assert!(response.headers().contains_key("etag"), "{path}");
        let body = response.text().await?;
        assert!(body.contains(needle), "{path} contains {needle:?}");
    }
    // No inline script anywhere in the page: the CSP would block it.
    let index = admin.http.get(admin.url("/")).send().await?.text().await?;
    for line in index.lines().filter(|l| l.contains("<script")) {
        assert!(line.contains(" src=\"/ui/"), "only external scripts: {line}");
    }
    admin.stop().await
}

#[tokio::test]
async fn an_unchanged_file_is_not_sent_again() -> anyhow::Result<()> {
    let (_dir, admin) = start().await?;
    let first = admin.http.get(admin.url("/ui/js/api.js")).send().await?;
    let etag = first.headers()["etag"].clone();
    let again =
        admin.http.get(admin.url("/ui/js/api.js")).header("if-none-match", etag.clone()).send().await?;
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], etag);
    assert_secured(&again);
    let other =
        admin.http.get(admin.url("/ui/js/api.js")).header("if-none-match", "\"stale\"").send().await?;
    assert_eq!(other.status(), 200);
    admin.stop().await
}

#[tokio::test]
async fn unknown_files_are_404_with_the_same_headers() -> anyhow::Result<()> {
    let (_dir, admin) = start().await?;
    for path in ["/ui/nope.js", "/ui/", "/ui/js/", "/ui/vendor/codemirror/mode/ruby.js", "/ui/JS/APP.JS"] {
        let response = admin.http.get(admin.url(path)).send().await?;
        assert_eq!(response.status(), 404, "{path}");
        assert_secured(&response);
        let body: serde_json::Value = response.json().await?;
        assert_eq!(body["code"], 404, "{path}");
    }
    admin.stop().await
}

/// Raw requests, because HTTP clients normalise `..` away before sending.
#[tokio::test]
async fn path_traversal_is_refused() -> anyhow::Result<()> {
    let (_dir, admin) = start().await?;
    let host = admin.base.trim_start_matches("http://").to_owned();
    for path in [
        "/ui/../Cargo.toml",
        "/ui/../../admin/Cargo.toml",
        "/ui/js/../index.html",
        "/ui/..%2fCargo.toml",
        "/ui/%2e%2e/%2e%2e/Cargo.toml",
        "/ui//etc/passwd",
        "/ui/%2fetc%2fpasswd",
    ] {
        let mut stream = tokio::net::TcpStream::connect(&host).await?;
        let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await?;
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).await?;
        let reply = String::from_utf8_lossy(&reply);
        let status = reply.lines().next().unwrap_or_default();
        assert!(status.contains(" 404 ") || status.contains(" 400 "), "{path}: {status}");
        assert!(!reply.contains("[package]") && !reply.contains("root:"), "{path} leaked a file");
    }
    admin.stop().await
}

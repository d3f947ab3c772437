//! The web UI's files (`admin/ui/`), embedded in the binary and served at `/` and `/ui/…`.
//!
//! The files are compiled in with `include_bytes!` from an explicit list rather than with a
//! crate such as `rust-embed`: no extra dependency or proc macro, the admin works from the
//! binary alone (no internet, no asset directory), and the list doubles as an allow-list —
//! a request is answered only when its path equals a listed name, so `..` and other
//! traversal tricks cannot reach anything else. A test checks that the list and the
//! directory agree, so a new file cannot be forgotten.
//!
//! Every answer carries a strict Content-Security-Policy (no inline scripts; the UI builds its
//! DOM from text), `nosniff` and `X-Frame-Options: DENY`. Files are revalidated on each load
//! (`Cache-Control: no-cache` with an `ETag`), so an upgraded admin never serves a stale UI.

use std::collections::HashMap;
use std::sync::OnceLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

use super::ApiError;

/// The policy of every UI response: scripts and connections only to this admin.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

macro_rules! assets {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/ui/", $path)) as &[u8])),*]
    };
}

/// Every file under `admin/ui/`, by its path there.
pub(crate) static ASSETS: &[(&str, &[u8])] = assets![
    "index.html",
    "css/app.css",
    "js/api.js",
    "js/app.js",
    "js/dom.js",
    "js/graph.js",
    "js/i18n.js",
    "js/i18n/en.js",
    "js/i18n/zh_CN.js",
    "js/ui.js",
    "js/pages/alarms.js",
    "js/pages/approvals.js",
    "js/pages/audit.js",
    "js/pages/backfills.js",
    "js/pages/calendars.js",
    "js/pages/dashboard.js",
    "js/pages/glue.js",
    "js/pages/grant.js",
    "js/pages/groups.js",
    "js/pages/job_form.js",
    "js/pages/jobs.js",
    "js/pages/log_detail.js",
    "js/pages/log_replay.js",
    "js/pages/log_search.js",
    "js/pages/login.js",
    "js/pages/logs.js",
    "js/pages/password.js",
    "js/pages/tokens.js",
    "js/pages/transfer.js",
    "js/pages/users.js",
    "js/pages/wasm.js",
    "js/pages/wasm_what_if.js",
    "js/pages/workflow_form.js",
    "js/pages/workflow_instance.js",
    "js/pages/workflow_instances.js",
    "js/pages/workflows.js",
    "vendor/README.md",
    "vendor/chartjs/LICENSE.md",
    "vendor/chartjs/chart.umd.js",
    "vendor/codemirror/LICENSE",
    "vendor/codemirror/codemirror.css",
    "vendor/codemirror/codemirror.js",
    "vendor/codemirror/mode/clike.js",
    "vendor/codemirror/mode/css.js",
    "vendor/codemirror/mode/htmlmixed.js",
    "vendor/codemirror/mode/javascript.js",
    "vendor/codemirror/mode/php.js",
    "vendor/codemirror/mode/powershell.js",
    "vendor/codemirror/mode/python.js",
    "vendor/codemirror/mode/shell.js",
    "vendor/codemirror/mode/xml.js",
    "vendor/dagre/LICENSE",
    "vendor/dagre/dagre.min.js",
    "vendor/dagre/dagre.min.js.LEGAL.txt",
];

/// An embedded file with what its answer needs.
struct Asset {
    bytes: &'static [u8],
    content_type: &'static str,
    etag: HeaderValue,
}

fn assets() -> &'static HashMap<&'static str, Asset> {
    static TABLE: OnceLock<HashMap<&'static str, Asset>> = OnceLock::new();
    TABLE.get_or_init(|| {
        ASSETS
            .iter()
            .map(|&(path, bytes)| {
                let digest = hex::encode(&Sha256::digest(bytes)[..12]);
                let etag =
                    HeaderValue::from_str(&format!("\"{digest}\"")).expect("hex is a valid header value");
                (path, Asset { bytes, content_type: content_type(path), etag })
            })
            .collect()
    })
}

/// The media type of `path` by its extension.
pub(crate) fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("md") => "text/markdown; charset=utf-8",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        _ => "text/plain; charset=utf-8",
    }
}

/// `GET /` (the app) and `GET /ui/{*path}` (its files).
pub(crate) fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/ui/{*path}", get(file))
        // The wildcard needs one character; an empty file name is just another unknown file.
        .route("/ui/", get(empty))
}

async fn empty(headers: HeaderMap) -> Response {
    serve("", &headers)
}

async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

async fn file(Path(path): Path<String>, headers: HeaderMap) -> Response {
    serve(&path, &headers)
}

fn serve(path: &str, request: &HeaderMap) -> Response {
    let Some(asset) = assets().get(path) else {
        return secured(ApiError::NotFound(format!("no such UI file: {path}")).into_response());
    };
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim().as_bytes() == asset.etag.as_bytes()));
    let mut response =
        if fresh { StatusCode::NOT_MODIFIED.into_response() } else { asset.bytes.into_response() };
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    headers.insert(header::ETAG, asset.etag.clone());
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    secured(response)
}

/// Adds the headers every UI answer carries.
fn secured(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::ASSETS;

    fn files_under(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("read ui dir") {
            let path: PathBuf = entry.expect("dir entry").path();
            if path.is_dir() {
                files_under(&path, base, out);
            } else {
                let relative = path.strip_prefix(base).expect("under base");
                out.push(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }

    /// The embedded list and `admin/ui/` agree: no file is missing from the binary.
    #[test]
    fn every_ui_file_is_embedded() {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("ui");
        let mut on_disk = Vec::new();
        files_under(&base, &base, &mut on_disk);
        on_disk.sort();
        let mut embedded: Vec<String> = ASSETS.iter().map(|(p, _)| (*p).to_owned()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk, "update ASSETS in admin/src/http/ui.rs");
    }
}

//! The authorization matrix of docs/security.md, executed: every row of its management-API
//! table is requested as each column's caller against fresh data and must answer what its cell
//! says; the table must list exactly the operations of the served OpenAPI document; and every
//! cookie-authenticated write without the CSRF header is refused. The other two tables of that
//! document (executor-facing admin API, executor API) are executed by `token_matrix.rs`.

use std::collections::BTreeSet;

use reqwest::Method;
use serde_json::Value;

use super::matrix_world::{Side, World};
use super::reply;

/// The document the matrices live in; a change to it is a change to this test's expectations.
const SECURITY_MD: &str = include_str!("../../../../../docs/security.md");

/// One row of a matrix table: the operation and the expected answer of each column.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) method: Method,
    /// The path as documented, with `{id}`-style placeholders.
    pub(crate) path: String,
    pub(crate) cells: Vec<String>,
}

impl Row {
    pub(crate) fn name(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// The rows of the table between `<!-- matrix:{name} -->` and `<!-- /matrix -->`, with the
/// number of columns its header names checked on every row.
pub(crate) fn table(name: &str) -> Vec<Row> {
    let marker = format!("<!-- matrix:{name} -->");
    let start = SECURITY_MD.find(&marker).unwrap_or_else(|| panic!("docs/security.md has no {marker}"));
    let section = &SECURITY_MD[start + marker.len()..];
    let section = &section[..section.find("<!-- /matrix -->").expect("the matrix's end marker")];
    let mut lines = section.lines().map(str::trim).filter(|l| l.starts_with('|'));
    let columns = split(lines.next().expect("a header row")).len();
    let rows: Vec<Row> = lines
        .filter(|l| l.starts_with("| `"))
        .map(|line| {
            let cells = split(line);
            assert_eq!(cells.len(), columns, "{name}: row {line:?} has the wrong number of cells");
            let operation = cells[0].trim_start_matches('`');
            let operation = &operation[..operation.find('`').expect("operation in backquotes")];
            let (method, path) = operation.split_once(' ').expect("METHOD /path");
            Row {
                method: Method::from_bytes(method.as_bytes()).expect("an HTTP method"),
                path: path.to_owned(),
                cells: cells[1..].to_vec(),
            }
        })
        .collect();
    assert!(!rows.is_empty(), "matrix {name} has rows");
    rows
}

fn split(line: &str) -> Vec<String> {
    line.trim().trim_matches('|').split('|').map(|c| c.trim().to_owned()).collect()
}

/// Asserts an HTTP answer against a cell: `ok` is any 2xx, anything else an exact status.
pub(crate) fn check(cell: &str, status: u16, what: &str, body: &Value) {
    match cell {
        "ok" => assert!((200..300).contains(&status), "{what}: the matrix says ok, got {status} {body}"),
        code => assert_eq!(status.to_string(), code, "{what}: the matrix says {code}; body {body}"),
    }
}

/// The management table's columns, in its order.
#[derive(Debug, Clone, Copy)]
enum Caller {
    Anonymous,
    OtherGroup,
    OwnGroup,
    ApiToken,
    Admin,
}

const CALLERS: [Caller; 5] =
    [Caller::Anonymous, Caller::OtherGroup, Caller::OwnGroup, Caller::ApiToken, Caller::Admin];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_management_matrix_of_the_security_document_holds() -> anyhow::Result<()> {
    let rows = table("management");
    let world = World::start().await?;

    // The table and the OpenAPI document list the same operations.
    let (_, doc) = world.env.anonymous().get("/api/v1/openapi.json").await;
    let documented = openapi_operations(&doc);
    let tabled: BTreeSet<String> = rows.iter().map(Row::name).collect();
    assert_eq!(tabled.len(), rows.len(), "an operation appears twice in the matrix");
    assert_eq!(tabled, documented, "the matrix and the OpenAPI document must list the same operations");

    for row in &rows {
        assert_eq!(row.cells.len(), CALLERS.len(), "{}", row.name());
        for (caller, cell) in CALLERS.iter().zip(&row.cells) {
            let side = match caller {
                Caller::OtherGroup | Caller::Admin => Side::Other,
                Caller::Anonymous | Caller::OwnGroup | Caller::ApiToken => Side::Own,
            };
            let client = match caller {
                Caller::Anonymous => world.env.anonymous(),
                Caller::OtherGroup | Caller::OwnGroup => world.env.login("alice").await,
                Caller::ApiToken => world.env.anonymous().with_token(&world.alice_token),
                Caller::Admin => world.env.login("root").await,
            };
            let target = world.target(row, side).await;
            let request = target.body.attach(client.request(row.method.clone(), &target.path));
            let (status, body) = reply(request.send().await?).await;
            check(cell, status, &format!("{} as {caller:?} ({})", row.name(), target.path), &body);
        }
    }
    world.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookie_writes_without_the_csrf_header_are_refused_everywhere() -> anyhow::Result<()> {
    let world = World::start().await?;
    let writes = table("management").into_iter().filter(|row| {
        row.method != Method::GET && !(row.method == Method::POST && row.path == "/api/v1/session")
    });
    let mut checked = 0;
    for row in writes {
        let mut alice = world.env.login("alice").await;
        alice.csrf = None;
        let target = world.target(&row, Side::Own).await;
        let request = target.body.attach(alice.request(row.method.clone(), &target.path));
        let (status, body) = reply(request.send().await?).await;
        assert_eq!(status, 403, "{} ({}) without X-CSRF-Token: {body}", row.name(), target.path);
        assert!(body["msg"].as_str().is_some_and(|m| m.contains("CSRF")), "{}: {body}", row.name());
        checked += 1;
    }
    assert!(checked >= 20, "non-GET operations checked: {checked}");
    world.stop().await
}

/// `METHOD /path` of every operation in the OpenAPI document.
fn openapi_operations(doc: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in ["get", "post", "put", "delete", "patch"] {
            if item.get(method).is_some() {
                out.insert(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    out
}

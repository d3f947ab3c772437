//! Reading a `/metrics` page the way Prometheus would: parsed by the Prometheus project's own
//! OpenMetrics parser (the `prometheus-client` Python package, which rejects what the format
//! forbids: a missing `# EOF`, a counter sample without `_total`, a unit the name does not end
//! with, a bucket out of order), and its samples summed by name and labels.
//!
//! The parser runs in the Python of `JOBWHEEL_OPENMETRICS_PYTHON` (`scripts/test.sh` installs
//! the package in the venv it keeps beside the build).

use std::process::Stdio;

use anyhow::{Context as _, bail, ensure};
use serde_json::Value;
use tokio::io::AsyncWriteExt as _;

/// Reads stdin as OpenMetrics text and prints every sample as a JSON `[name, labels, value]`.
const PARSE: &str = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append([s.name, s.labels, s.value])
json.dump(out, sys.stdout)
"#;

/// One sample: its name, its labels and its value.
type Sample = (String, Vec<(String, String)>, f64);

/// One scrape's samples.
#[derive(Debug)]
pub struct Samples(Vec<Sample>);

impl Samples {
    /// The sum of the samples named `name` whose labels include every pair of `labels`.
    pub fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.0
            .iter()
            .filter(|(n, have, _)| {
                n == name && labels.iter().all(|(k, v)| have.iter().any(|(hk, hv)| hk == k && hv == v))
            })
            .map(|(_, _, value)| value)
            .sum()
    }

    /// Whether a sample named `name` exists at all.
    pub fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _, _)| n == name)
    }
}

/// Parses `text`; an error carries the parser's complaint.
pub async fn parse(text: &str) -> anyhow::Result<Samples> {
    let python = match std::env::var("JOBWHEEL_OPENMETRICS_PYTHON") {
        Ok(python) => python,
        Err(_) => bail!("JOBWHEEL_OPENMETRICS_PYTHON is not set (scripts/test.sh sets it)"),
    };
    let mut child = tokio::process::Command::new(&python)
        .args(["-c", PARSE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {python}"))?;
    let mut stdin = child.stdin.take().context("stdin")?;
    stdin.write_all(text.as_bytes()).await?;
    drop(stdin);
    let output = child.wait_with_output().await?;
    ensure!(
        output.status.success(),
        "the OpenMetrics parser refused the page: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<(String, serde_json::Map<String, Value>, f64)> = serde_json::from_slice(&output.stdout)?;
    Ok(Samples(
        rows.into_iter()
            .map(|(name, labels, value)| {
                let labels =
                    labels.into_iter().map(|(k, v)| (k, v.as_str().unwrap_or_default().to_owned())).collect();
                (name, labels, value)
            })
            .collect(),
    ))
}

/// `GET {url}` with an optional bearer token; the page, which must be served as OpenMetrics.
pub async fn scrape(url: &str, token: Option<&str>) -> anyhow::Result<String> {
    let mut request = reqwest::Client::new().get(url);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await?;
    ensure!(response.status().is_success(), "GET {url}: {}", response.status());
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    ensure!(
        content_type.starts_with("application/openmetrics-text"),
        "GET {url}: content type {content_type}"
    );
    Ok(response.text().await?)
}

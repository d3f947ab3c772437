//! The management API as the system tests and benchmarks use it: an administrator's API token, JSON in and
//! out, and waits on log rows.

use std::time::Duration;

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

/// A client of one admin's `/api/v1`.
#[derive(Clone)]
pub struct Api {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl Api {
    pub fn new(base: &str, token: &str) -> Api {
        Api { base: base.to_owned(), token: token.to_owned(), http: reqwest::Client::new() }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let mut request =
            self.http.request(method.clone(), format!("{}/api/v1{path}", self.base)).bearer_auth(&self.token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        let status = response.status();
        let text = response.text().await?;
        if !status.is_success() {
            bail!("{method} {path}: {status} {text}");
        }
        Ok(if text.is_empty() { Value::Null } else { serde_json::from_str(&text)? })
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.call(reqwest::Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    pub async fn put(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.call(reqwest::Method::PUT, path, Some(body)).await
    }

    /// The raw text of a GET (to search a whole answer for a value that must not be there).
    pub async fn get_text(&self, path: &str) -> anyhow::Result<String> {
        Ok(self.get(path).await?.to_string())
    }

    /// Creates a job in `group` from upstream's form fields (`fields` override the defaults:
    /// a stopped BEAN `demoJobHandler` job with no schedule); its id.
    pub async fn job(&self, group: i64, desc: &str, fields: Value) -> anyhow::Result<i64> {
        let mut form = json!({
            "jobGroup": group, "jobDesc": desc, "author": "system-test",
            "scheduleType": "NONE", "scheduleConf": "",
            "glueType": "BEAN", "executorHandler": "demoJobHandler",
            "executorRouteStrategy": "FIRST", "misfireStrategy": "DO_NOTHING",
            "executorBlockStrategy": "SERIAL_EXECUTION", "executorTimeout": 0, "executorFailRetryCount": 0
        });
        for (key, value) in fields.as_object().context("fields object")? {
            form[key] = value.clone();
        }
        let job = self.post("/jobs", form).await?;
        job["id"].as_i64().context("job id")
    }

    /// Triggers a job once, optionally on the given addresses.
    pub async fn trigger(&self, job: i64, address_list: Option<&str>) -> anyhow::Result<()> {
        let mut body = json!({"executorParam": ""});
        if let Some(list) = address_list {
            body["addressList"] = json!(list);
        }
        self.post(&format!("/jobs/{job}/trigger"), body).await.map(drop)
    }

    /// The job's logs, oldest first.
    pub async fn logs(&self, job: i64) -> anyhow::Result<Vec<Value>> {
        let listed = self.get(&format!("/logs?jobId={job}&limit=500")).await?;
        let mut items = listed["items"].as_array().cloned().unwrap_or_default();
        items.reverse();
        Ok(items)
    }

    /// Waits until `condition` holds for the job's logs (oldest first); returns them.
    pub async fn wait_logs(
        &self,
        job: i64,
        timeout: Duration,
        what: &str,
        condition: impl Fn(&[Value]) -> bool,
    ) -> anyhow::Result<Vec<Value>> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let logs = self.logs(job).await?;
            if condition(&logs) {
                return Ok(logs);
            }
            if tokio::time::Instant::now() > deadline {
                bail!("timed out after {timeout:?} waiting for {what}; logs of job {job}: {logs:#?}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The whole execution log of a run, from its executor.
    pub async fn content(&self, log: i64) -> anyhow::Result<String> {
        let page = self.get(&format!("/logs/{log}/content?fromLine=1")).await?;
        Ok(page["logContent"].as_str().unwrap_or_default().to_owned())
    }
}

/// At least `n` runs, and every run finished: its result stored (a handle code) and its
/// trigger's outcome too (a trigger code, with the message and address).
pub fn all_done(logs: &[Value], n: usize) -> bool {
    // A row staged for a scheduled fire that has not come yet (trigger and handle code 0) is
    // not a run; a shared scheduler stages up to 5 s of them (docs/engine.md).
    let code = |l: &Value, key: &str| l[key].as_i64().unwrap_or(0);
    let runs: Vec<&Value> =
        logs.iter().filter(|l| code(l, "triggerCode") != 0 || code(l, "handleCode") != 0).collect();
    // The trigger's outcome is written after the sends of its second (docs/engine.md, "Sends
    // first"), so a fast run's result can be stored before it: both are waited for.
    runs.len() >= n && runs.iter().all(|l| code(l, "handleCode") > 0 && code(l, "triggerCode") != 0)
}

/// The executor address of each log.
pub fn addresses(logs: &[Value]) -> Vec<String> {
    logs.iter().map(|l| l["executorAddress"].as_str().unwrap_or_default().to_owned()).collect()
}

/// `POST {admin}/api/{method}` (`registry` or `registryRemove`) of `address` under `app` with the
/// test access token, as an executor sends it; fails unless the admin answers code 200.
pub async fn registry_call(admin: &str, method: &str, app: &str, address: &str) -> anyhow::Result<()> {
    let body = json!({"registryGroup": "EXECUTOR", "registryKey": app, "registryValue": address});
    let reply: Value = reqwest::Client::new()
        .post(format!("{}/api/{method}", admin.trim_end_matches('/')))
        .header(jobwheel_protocol::ACCESS_TOKEN_HEADER, crate::TOKEN)
        .json(&body)
        .send()
        .await?
        .json()
        .await?;
    anyhow::ensure!(reply["code"] == 200, "{method} {address}: {reply}");
    Ok(())
}

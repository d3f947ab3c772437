//! Headless Chromium through chromedriver: the driver subprocess (its whole process group is
//! killed when dropped, also when a test panics) and a small WebDriver vocabulary with bounded
//! waits on top of `fantoccini`.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use fantoccini::error::CmdError;
use fantoccini::{Client, ClientBuilder, Locator, elements::Element};
use serde_json::{Value, json};

/// How long one expected change in the page may take.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// A running chromedriver on a loopback port.
pub(crate) struct Chromedriver {
    child: Child,
    pub(crate) url: String,
    pub(crate) log: PathBuf,
}

/// The chromedriver to use: `$CHROMEDRIVER`, else `chromedriver` on `PATH`.
fn find_chromedriver() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMEDRIVER") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("chromedriver")).find(|p| p.is_file())
}

impl Chromedriver {
    /// Starts chromedriver, or returns `None` when it is not installed — which fails the test
    /// under `CI=true` (scripts/test.sh installs it) and skips it elsewhere with a note.
    pub(crate) async fn start(dir: &Path) -> anyhow::Result<Option<Self>> {
        let Some(binary) = find_chromedriver() else {
            if std::env::var_os("CI").is_some() {
                bail!(
                    "chromedriver is not installed; CI needs it (apt-get install chromium chromium-driver)"
                );
            }
            eprintln!(
                "SKIPPED: chromedriver not found (install chromium and chromium-driver, or set CHROMEDRIVER)"
            );
            return Ok(None);
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let log = dir.join("chromedriver.log");
        let child = Command::new(&binary)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, so dropping it also ends the browsers it started.
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let driver = Self { child, url: format!("http://127.0.0.1:{port}"), log };
        let http = reqwest::Client::new();
        let deadline = Instant::now() + PATIENCE;
        loop {
            let ready = http.get(format!("{}/status", driver.url)).send().await;
            if let Ok(response) = ready {
                let status: Value = response.json().await.unwrap_or_default();
                if status["value"]["ready"] == json!(true) {
                    return Ok(Some(driver));
                }
            }
            if Instant::now() > deadline {
                bail!("chromedriver did not become ready within {PATIENCE:?}; see {}", driver.log.display());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// A browser session on the admin at `base`.
pub(crate) struct Browser {
    pub(crate) client: Client,
    pub(crate) base: String,
    screenshots: Option<PathBuf>,
}

impl Browser {
    /// Opens headless Chromium (1280×800) through `driver`.
    pub(crate) async fn open(driver: &Chromedriver, base: &str, profile: &Path) -> anyhow::Result<Self> {
        let mut options = json!({
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,800", "--lang=en-US", "--no-first-run", "--disable-extensions",
                "--disable-crash-reporter", "--disable-breakpad",
                format!("--user-data-dir={}", profile.display()),
            ],
        });
        if let Some(chrome) = std::env::var_os("CHROME").map(PathBuf::from).or_else(|| {
            ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        }) {
            options["binary"] = json!(chrome.display().to_string());
        }
        let mut caps = serde_json::Map::new();
        caps.insert("browserName".to_owned(), json!("chrome"));
        caps.insert("goog:chromeOptions".to_owned(), options);
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&driver.url)
            .await
            .with_context(|| format!("cannot open a Chromium session; see {}", driver.log.display()))?;
        // A 1280×800 viewport: the window is that much larger than its page area.
        let chrome = client.execute("return window.outerHeight - window.innerHeight;", Vec::new()).await?;
        let extra = chrome.as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0);
        client.set_window_size(1280, 800 + extra).await?;
        let screenshots = std::env::var_os("JOBWHEEL_SCREENSHOTS").map(PathBuf::from);
        Ok(Self { client, base: base.to_owned(), screenshots })
    }

    /// Navigates to `path` on the admin (e.g. `/#/jobs`).
    pub(crate) async fn go(&self, path: &str) -> anyhow::Result<()> {
        self.client.goto(&format!("{}{path}", self.base)).await?;
        Ok(())
    }

    /// Sets the hash route without reloading the app.
    pub(crate) async fn route(&self, hash: &str) -> anyhow::Result<()> {
        self.client.execute("location.hash = arguments[0];", vec![json!(hash)]).await?;
        Ok(())
    }

    /// The first element matching `css`, waiting for it to appear.
    pub(crate) async fn find(&self, css: &str) -> anyhow::Result<Element> {
        self.client
            .wait()
            .at_most(PATIENCE)
            .every(Duration::from_millis(50))
            .for_element(Locator::Css(css))
            .await
            .with_context(|| format!("no element {css} within {PATIENCE:?}"))
    }

    /// Runs `act` on the first element matching `css`. The app re-renders parts of the page
    /// (the menu on a route change, a table after a search, a form on load), so an element
    /// found an instant ago can be replaced before the action lands; then the new one is found
    /// and `act` runs again, until [`PATIENCE`] is spent.
    async fn act_on<F, Fut>(&self, css: &str, act: F) -> anyhow::Result<()>
    where
        F: Fn(Element) -> Fut,
        Fut: Future<Output = Result<(), CmdError>>,
    {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match act(self.find(css).await?).await {
                Err(e) if e.is_stale_element_reference() && Instant::now() < deadline => {}
                done => return Ok(done?),
            }
        }
    }

    pub(crate) async fn click(&self, css: &str) -> anyhow::Result<()> {
        self.act_on(css, |el| async move { el.click().await })
            .await
            .with_context(|| format!("cannot click {css}"))
    }

    /// Replaces the value of the input `css` with `text`.
    pub(crate) async fn fill(&self, css: &str, text: &str) -> anyhow::Result<()> {
        self.act_on(css, |el| async move {
            el.clear().await?;
            el.send_keys(text).await
        })
        .await
        .with_context(|| format!("cannot type into {css}"))
    }

    pub(crate) async fn choose(&self, css: &str, value: &str) -> anyhow::Result<()> {
        self.act_on(css, |el| async move { el.select_by_value(value).await })
            .await
            .with_context(|| format!("no option {value} in {css}"))
    }

    /// Waits until the text of `css` satisfies `ok`; returns it.
    pub(crate) async fn wait_text(
        &self,
        css: &str,
        what: &str,
        ok: impl Fn(&str) -> bool,
    ) -> anyhow::Result<String> {
        let deadline = Instant::now() + PATIENCE;
        let mut last = String::new();
        loop {
            if let Ok(el) = self.client.find(Locator::Css(css)).await {
                last = el.text().await.unwrap_or_default();
                if ok(&last) {
                    return Ok(last);
                }
            }
            if Instant::now() > deadline {
                bail!("timed out after {PATIENCE:?} waiting for {what} in {css}; its text: {last:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until `css` contains `needle`.
    pub(crate) async fn wait_contains(&self, css: &str, needle: &str) -> anyhow::Result<String> {
        self.wait_text(css, &format!("{needle:?}"), |text| text.contains(needle)).await
    }

    /// Runs `script` in the page and returns its value.
    pub(crate) async fn js(&self, script: &str) -> anyhow::Result<Value> {
        Ok(self.client.execute(script, Vec::new()).await?)
    }

    /// The current hash route (`#/jobs/3/wasm`).
    pub(crate) async fn hash(&self) -> anyhow::Result<String> {
        Ok(self.client.current_url().await?.fragment().unwrap_or_default().to_owned())
    }

    /// Waits until the hash route ends with `suffix`; returns it without the `#`.
    pub(crate) async fn wait_hash(&self, suffix: &str) -> anyhow::Result<String> {
        self.wait_hash_where(&format!("…{suffix}"), |hash| hash.ends_with(suffix)).await
    }

    /// Waits until the hash route contains `part`; returns it without the `#`.
    pub(crate) async fn wait_hash_containing(&self, part: &str) -> anyhow::Result<String> {
        self.wait_hash_where(&format!("…{part}…"), |hash| hash.contains(part)).await
    }

    async fn wait_hash_where(&self, what: &str, ok: impl Fn(&str) -> bool) -> anyhow::Result<String> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let hash = self.hash().await?;
            if ok(&hash) {
                return Ok(hash);
            }
            if Instant::now() > deadline {
                let page = self.js("return document.body.innerText;").await?;
                bail!("the app did not go to {what}; at #{hash}: {page}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Saves a PNG of the page as `<name>.png` when `JOBWHEEL_SCREENSHOTS` names a directory.
    pub(crate) async fn screenshot(&self, name: &str) -> anyhow::Result<()> {
        let Some(dir) = &self.screenshots else { return Ok(()) };
        // Without the test's pile of notices, and after the last frame painted (charts, editor).
        self.js("document.getElementById('notices')?.replaceChildren();
                 return new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));")
            .await?;
        let png = self.client.screenshot().await?;
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join(format!("{name}.png")), png)?;
        Ok(())
    }

    pub(crate) async fn close(self) -> anyhow::Result<()> {
        self.client.close().await?;
        Ok(())
    }
}

impl Browser {
    /// Clicks `refresh` until the text of `css` contains `needle` (for state the page only
    /// shows after a reload, like a run finishing).
    pub(crate) async fn refresh_until(
        &self,
        refresh: &str,
        css: &str,
        needle: &str,
    ) -> anyhow::Result<String> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Ok(el) = self.client.find(Locator::Css(css)).await {
                let text = el.text().await.unwrap_or_default();
                if text.contains(needle) {
                    return Ok(text);
                }
            }
            if Instant::now() > deadline {
                let text = self.js("return document.body.innerText;").await?;
                bail!("timed out after {PATIENCE:?} waiting for {needle:?} in {css}; the page: {text}");
            }
            // The page may be re-rendering (the element detached); try again on the next round.
            let _ = self.click(refresh).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// Opens the action menu of job `id` in the job list and picks `action`.
    pub(crate) async fn job_action(&self, id: i64, action: &str) -> anyhow::Result<()> {
        self.click(&format!("tr[data-job-id=\"{id}\"] .action-menu summary")).await?;
        self.click(&format!("tr[data-job-id=\"{id}\"] [data-action=\"{action}\"]")).await
    }
}

//! The admin web UI in headless Chromium, driven through chromedriver (WebDriver) against a
//! real admin and a real executor: the main story (`story`), workflows (`workflows`), alarm
//! channels (`alarms`), approval of a held module version (`approvals`), an XSS probe (`xss`) and single sign-on with a real OpenID provider
//! (`sso`).
//!
//! One browser and one stack serve both, keeping the CI cost to a single chromedriver.
//! Without chromedriver the test is skipped with a note, except under `CI=true`, where it
//! fails (scripts/test.sh installs chromium and chromium-driver). Set `JOBWHEEL_SCREENSHOTS`
//! to a directory to save PNGs of the main pages (scripts/screenshots.sh does this for
//! docs/screenshots/).

#![allow(
    clippy::print_stderr,
    reason = "a skipped browser test and a failure screenshot are reported to the person running the tests"
)]

mod alarms;
mod approvals;
mod backfills;
mod calendars;
mod driver;
mod sso;
mod stack;
mod story;
mod workflows;
mod xss;

use anyhow::Context as _;
use driver::{Browser, Chromedriver};
use stack::Stack;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_ui_walks_the_main_story_and_shows_hostile_text_as_text() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let Some(driver) = Chromedriver::start(dir.path()).await? else { return Ok(()) };
    let stack = Stack::start(dir.path()).await?;
    let browser = Browser::open(&driver, &stack.base, &dir.path().join("profile")).await?;
    let outcome = async {
        let echo_job = story::run(&browser, &stack, dir.path()).await.context("the main story")?;
        workflows::run(&browser, echo_job).await.context("the workflow editor and instance page")?;
        backfills::run(&browser, echo_job).await.context("a backfill from the job's actions")?;
        alarms::run(&browser, echo_job).await.context("an alarm channel and its delivery log")?;
        xss::run(&browser, story::GROUP_TITLE, echo_job).await.context("the XSS probe")?;
        approvals::run(&browser, &stack.base, echo_job).await.context("a held version approved")?;
        if stack.idp.is_some() {
            sso::run(&browser, story::GROUP_TITLE).await.context("single sign-on")?;
        }
        anyhow::Ok(())
    }
    .await;
    if outcome.is_err() {
        // What the browser saw, for the failure report.
        if let Ok(png) = browser.client.screenshot().await {
            let path = std::env::temp_dir().join("jobwheel-browser-failure.png");
            if std::fs::write(&path, png).is_ok() {
                eprintln!("screenshot of the failing page: {}", path.display());
            }
        }
    }
    let closed = browser.close().await;
    let stopped = stack.stop().await;
    drop(driver);
    outcome?;
    closed?;
    stopped
}

//! The backfill step: the operator backfills the story's daily job over the last week from its
//! actions (the dialog's defaults, three at a time), lands on the backfill's page and watches
//! its progress reach every scheduled time of the week (the job's calendars applied: the story
//! keeps it off weekends) done on the real executor, the cancel button gone once it is over;
//! the list of backfills shows it.

use anyhow::{Context as _, ensure};

use crate::driver::Browser;

/// `job` is the story's daily (03:00) GLUE_WASM `hello` job.
pub(crate) async fn run(browser: &Browser, job: i64) -> anyhow::Result<()> {
    browser.click("#menu-jobs").await?;
    browser.wait_contains("#job-table", "Say hello from the browser").await?;
    browser.job_action(job, "backfill").await?;
    browser.fill("#backfill-parallelism", "3").await?;
    browser.click("#backfill-modal [data-action=backfill]").await?;
    browser.wait_contains("#notices", "Backfill started").await?;
    let status =
        browser.wait_text("#backfill-status", "the backfill to finish", |t| t.contains("Done")).await?;
    let id = browser.js("return Number(location.hash.split('/').pop());").await?;
    let id = id.as_i64().with_context(|| format!("the backfill's id in the address: {id}"))?;
    let view = browser
        .js(&format!(
            "const x = new XMLHttpRequest(); x.open('GET', '/api/v1/backfills/{id}', false); x.send();
             return JSON.parse(x.responseText);"
        ))
        .await?;
    let total = view["total"].as_i64().unwrap_or(0);
    ensure!(
        // Seven days at 03:00, two of them a weekend the story's calendar keeps the job off.
        total == 5 && view["succeeded"] == total && view["handed"] == total,
        "a week of daily times (calendars applied), each run once and done: {view} ({status})"
    );
    let counts = browser.wait_contains(".backfill-counts", &format!("{total} done")).await?;
    ensure!(counts.contains(&format!("of {total}")), "{counts}");
    ensure!(
        browser.find("#backfill-cancel").await?.attr("hidden").await?.is_some(),
        "a backfill that is over cannot be cancelled"
    );
    browser.screenshot("backfill").await?;
    browser.click("#menu-backfills").await?;
    browser.wait_contains("#backfill-table", &format!("#{id}")).await?;
    Ok(())
}

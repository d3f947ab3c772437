//! The calendars step of the story: an administrator makes a "weekend" calendar in the dialog
//! and imports a holiday `.ics` file; the story's job is then set never to fire on weekends and
//! not between 12:00 and 13:00, its preview skips Saturdays and Sundays, and the form shows the
//! rules again when reopened.

use std::path::Path;

use anyhow::ensure;
use chrono::{Datelike, NaiveDate, Weekday};

use crate::driver::Browser;

const ICS: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//story//EN\r\nX-WR-CALNAME:Story holidays\r\n\
BEGIN:VEVENT\r\nUID:1\r\nSUMMARY:New Year\r\nDTSTART;VALUE=DATE:20270101\r\nDTEND;VALUE=DATE:20270102\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:2\r\nSUMMARY:Christmas\r\nDTSTART;VALUE=DATE:20261225\r\nRRULE:FREQ=YEARLY\r\nEND:VEVENT\r\n\
END:VCALENDAR\r\n";

pub(crate) async fn run(browser: &Browser, dir: &Path, job: i64) -> anyhow::Result<()> {
    browser.click("#menu-calendars").await?;
    browser.click("#calendar-add").await?;
    browser.fill("#calendar-name", "weekend").await?;
    browser.click("#calendar-modal input[data-weekday=SAT]").await?;
    browser.click("#calendar-modal input[data-weekday=SUN]").await?;
    browser.click("#calendar-modal [data-action=save]").await?;
    browser.wait_contains("#calendar-table", "Sat, Sun").await?;

    let file = dir.join("holidays.ics");
    std::fs::write(&file, ICS)?;
    browser.click("#calendar-import").await?;
    browser.fill("#ics-name", "story-holidays").await?;
    browser.find("#ics-file").await?.send_keys(&file.display().to_string()).await?;
    browser.click("#ics-modal [data-action=import]").await?;
    let table = browser
        .wait_text("#calendar-table", "the imported calendar", |t| {
            t.contains("story-holidays") && t.contains("weekend")
        })
        .await?;
    ensure!(table.contains("1 yearly") && table.contains("1 date(s)"), "the .ics days: {table}");
    browser.screenshot("calendars").await?;

    browser.route(&format!("#/jobs/{job}/edit")).await?;
    browser.find("#job-neverOn").await?.select_by_label("weekend").await?;
    browser.fill("#job-exclusionWindows", "12:00-13:00").await?;
    browser.click("#job-next-times").await?;
    let times = browser.wait_text("#next-times", "five fire times", |t| t.lines().count() == 5).await?;
    for line in times.lines() {
        let day = NaiveDate::parse_from_str(line.get(..10).unwrap_or_default(), "%Y-%m-%d")?;
        ensure!(!matches!(day.weekday(), Weekday::Sat | Weekday::Sun), "no weekend in the preview: {times}");
    }
    browser.click("#next-times-modal .modal-x").await?;
    browser.click("#job-save").await?;
    browser.wait_contains("#job-table", "Say hello from the browser").await?;

    browser.route(&format!("#/jobs/{job}/edit")).await?;
    let window = browser.find("#job-exclusionWindows").await?.prop("value").await?;
    ensure!(window.as_deref() == Some("12:00-13:00"), "the window is kept: {window:?}");
    let chosen = browser
        .js("return [...document.querySelector('#job-neverOn').selectedOptions].map((o) => o.textContent);")
        .await?;
    ensure!(chosen == serde_json::json!(["weekend"]), "never on weekend is kept: {chosen}");
    browser.click("#menu-jobs").await?;
    browser.wait_hash("/jobs").await?;
    Ok(())
}

//! Contract checks for calendars, job calendar references and exclusion windows.

use anyhow::ensure;
use jobwheel_admin::store::{CalendarId, DayRefs, JobId, NewCalendar, day_mode};

use crate::store::{Admins, group, job};

fn calendar(name: &str, days: &str) -> NewCalendar {
    NewCalendar {
        name: name.to_owned(),
        description: format!("{name} days"),
        days: days.to_owned(),
        update_ms: 7,
    }
}

/// Added, found by id and name, listed by name, renamed, a duplicate name refused; referred to
/// by jobs (only/never, windows) and read back for many jobs in one call; not deletable while
/// referred to; a job's rows gone with the job; nothing stored for a missing job or calendar.
pub(crate) async fn check(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let weekend = a.add_calendar(&calendar("weekend", r#"{"weekdays":["SAT","SUN"]}"#)).await?;
    let holidays = a.add_calendar(&calendar("holidays", r#"{"dates":["2027-01-01"]}"#)).await?;
    ensure!(a.add_calendar(&calendar("weekend", "{}")).await.is_err(), "names are unique");
    let found = b.find_calendar("holidays").await?.expect("found by name");
    ensure!(found.id == holidays && found.calendar.description == "holidays days", "{found:?}");
    let names: Vec<String> = b.list_calendars().await?.into_iter().map(|c| c.calendar.name).collect();
    ensure!(names == ["holidays", "weekend"], "by name: {names:?}");
    ensure!(a.update_calendar(holidays, &calendar("public-holidays", r#"{"yearly":["01-01"]}"#)).await?);
    let loaded = b.load_calendar(holidays).await?.expect("loaded");
    ensure!(
        loaded.calendar.name == "public-holidays" && loaded.calendar.days.contains("01-01"),
        "{loaded:?}"
    );
    ensure!(!a.update_calendar(CalendarId(i64::MAX), &calendar("ghost", "{}")).await?, "absent");

    let g = group(&**a, "calendar-app").await?;
    let (x, y) = (a.add_job(&job(g, "x")).await?, a.add_job(&job(g, "y")).await?);
    let days =
        DayRefs { only_on: vec![weekend], never_on: vec![holidays], windows: "23:00-01:00".to_owned() };
    a.set_job_days(x, &days).await?;
    a.set_job_days(y, &DayRefs { never_on: vec![holidays, CalendarId(i64::MAX)], ..DayRefs::default() })
        .await?;
    a.set_job_days(JobId(i32::MAX), &days).await?;
    let rows = b.job_days(&[x, y, JobId(i32::MAX)]).await?;
    let mut seen: Vec<(JobId, Option<i64>, String, bool)> =
        rows.iter().map(|r| (r.job_id, r.calendar_id, r.mode.clone(), r.value.is_empty())).collect();
    seen.sort();
    let mut expected = vec![
        (x, None, day_mode::WINDOWS.to_owned(), false),
        (x, Some(weekend.0), day_mode::ONLY.to_owned(), false),
        (x, Some(holidays.0), day_mode::NEVER.to_owned(), false),
        (y, Some(holidays.0), day_mode::NEVER.to_owned(), false),
    ];
    expected.sort();
    ensure!(seen == expected, "{seen:?}");
    ensure!(rows.iter().any(|r| r.job_id == x && r.value == "23:00-01:00"), "windows as stored");
    ensure!(rows.iter().any(|r| r.calendar_id == Some(weekend.0) && r.value.contains("SAT")), "days joined");
    let users = b.calendar_jobs(holidays).await?;
    ensure!(users == [x, y], "{users:?}");

    ensure!(!a.delete_calendar(holidays).await?, "still referred to");
    a.set_job_days(y, &DayRefs::default()).await?;
    ensure!(b.job_days(&[y]).await?.is_empty(), "cleared");
    ensure!(a.delete_job(x).await?);
    ensure!(
        b.job_days(&[x]).await?.is_empty() && b.calendar_jobs(holidays).await?.is_empty(),
        "gone with the job"
    );
    ensure!(a.delete_calendar(holidays).await? && a.delete_calendar(weekend).await?);
    ensure!(b.list_calendars().await?.is_empty(), "deleted");
    ensure!(a.delete_job(y).await? && a.delete_group(g).await?);
    Ok(())
}

//! Migration 0035 on each database: a workflow's calendars and windows, kept as JSON on its row
//! before, read back from the side tables once the migration's copies have run — the only-on
//! and never-on references and the windows; a reference to a calendar deleted since is dropped,
//! and a workflow without rules (`{}`) or with unreadable text gets none. The statements are the
//! migration file's own `INSERT`s, run on rows as an older admin wrote them (the dropped column
//! put back for them). Then a calendar a workflow refers to cannot be deleted.

use jobwheel_admin::store::{self, CalendarId, DayRefs, NewCalendar, Store, WorkflowId};

use super::migration::{Kind, on_fresh, raw, statements};

fn calendar(name: &str) -> NewCalendar {
    NewCalendar {
        name: name.to_owned(),
        description: String::new(),
        days: r#"{"weekdays":["SAT"]}"#.to_owned(),
        update_ms: 0,
    }
}

async fn workflow(store: &dyn Store, name: &str) -> anyhow::Result<WorkflowId> {
    let graph = r#"{"nodes":[],"edges":[]}"#.to_owned();
    let mut w =
        crate::engine::workflows::workflow(store::GroupId(1), &serde_json::from_str(&graph)?, 1, "SKIP");
    w.name = name.to_owned();
    Ok(store.add_workflow(&w).await?)
}

async fn copy(kind: Kind, migration: &str) -> anyhow::Result<()> {
    on_fresh(kind, async |url| {
        let store = store::connect(url).await?;
        let (rest, holiday, gone) = (
            store.add_calendar(&calendar("rest")).await?,
            store.add_calendar(&calendar("holiday")).await?,
            store.add_calendar(&calendar("gone")).await?,
        );
        let (ruled, plain, damaged) =
            (workflow(&*store, "ruled").await?, workflow(&*store, "plain").await?, workflow(&*store, "damaged").await?);
        anyhow::ensure!(store.delete_calendar(gone).await?, "nothing refers to it yet");
        let old = format!(
            "ALTER TABLE jobwheel_workflow ADD COLUMN days VARCHAR(1024) NOT NULL DEFAULT '{{}}';
            UPDATE jobwheel_workflow SET days = '{{\"onlyOn\":[{rest}],\"neverOn\":[{holiday},{gone}],\"exclusionWindows\":[\"01:00-02:00\",\"23:00-01:00\"]}}' WHERE id = {ruled};
            UPDATE jobwheel_workflow SET days = 'not json' WHERE id = {damaged};",
            rest = rest.0,
            holiday = holiday.0,
            gone = gone.0,
            ruled = ruled.0,
            damaged = damaged.0,
        );
        let old = if matches!(kind, Kind::Postgres) {
            // PostgreSQL has no cheap test of JSON text before 16: the migration relies on the
            // admin having written the column, so the damaged row is not part of its case.
            old.replace(&format!("UPDATE jobwheel_workflow SET days = 'not json' WHERE id = {};", damaged.0), "")
        } else {
            old
        };
        raw(kind, url, &old).await?;
        for copy in statements(migration, "INSERT INTO jobwheel_workflow_") {
            raw(kind, url, copy).await?;
        }
        let days = |id| {
            let store = store.clone();
            async move { anyhow::Ok(store.load_workflow(id).await?.expect("workflow").workflow.days) }
        };
        let want = DayRefs {
            only_on: vec![rest],
            never_on: vec![holiday],
            windows: "01:00-02:00,23:00-01:00".to_owned(),
        };
        let got = days(ruled).await?;
        anyhow::ensure!(
            (got.only_on.clone(), got.never_on.clone()) == (want.only_on.clone(), want.never_on.clone()),
            "{got:?}"
        );
        let mut windows: Vec<&str> = got.windows.split(',').collect();
        windows.sort_unstable();
        anyhow::ensure!(windows == ["01:00-02:00", "23:00-01:00"], "{got:?}");
        anyhow::ensure!(days(plain).await? == DayRefs::default());
        anyhow::ensure!(days(damaged).await? == DayRefs::default());
        anyhow::ensure!(!store.delete_calendar(holiday).await?, "a workflow refers to it");
        anyhow::ensure!(store.calendar_workflows(holiday).await? == [ruled]);
        anyhow::ensure!(store.calendar_workflows(CalendarId(rest.0)).await? == [ruled]);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn workflow_rules_move_to_the_side_tables_on_sqlite() -> anyhow::Result<()> {
    copy(Kind::Sqlite, include_str!("../../../migrations/sqlite/0035_workflow_calendars.sql")).await
}

#[tokio::test]
async fn workflow_rules_move_to_the_side_tables_on_postgres() -> anyhow::Result<()> {
    copy(Kind::Postgres, include_str!("../../../migrations/postgres/0035_workflow_calendars.sql")).await
}

#[tokio::test]
async fn workflow_rules_move_to_the_side_tables_on_mysql() -> anyhow::Result<()> {
    copy(Kind::Mysql, include_str!("../../../migrations/mysql/0035_workflow_calendars.sql")).await
}

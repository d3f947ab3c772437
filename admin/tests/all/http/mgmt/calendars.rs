//! Calendars and exclusion windows through the management API: administrators manage
//! calendars and everyone reads them; a job's `onlyOn`/`neverOn`/`exclusionWindows` are
//! checked, shown, kept when left out, and shape the preview, the start and the next fire time;
//! a calendar's change reschedules the running jobs that use it; `.ics` files are imported.

use chrono::{DateTime, Datelike, Timelike, Utc, Weekday};
use reqwest::Method;
use serde_json::{Value, json};

use super::jobs::form;
use super::{Env, reply};

fn times(value: &Value) -> Vec<DateTime<Utc>> {
    value.as_array().map_or_else(Vec::new, |a| {
        a.iter().filter_map(Value::as_i64).filter_map(DateTime::from_timestamp_millis).collect()
    })
}

#[tokio::test]
async fn calendars_are_managed_by_administrators_and_read_by_everyone() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("cal-app").await;
    env.normal_user("alice", &[group]).await;
    let (root, alice) = (env.login("root").await, env.login("alice").await);

    let body = json!({"name": "rest-days", "description": "weekends",
        "weekdays": ["sunday", "SAT"], "yearly": ["1-1"], "ranges": [{"from": "2031-02-01", "to": "2031-02-03"}]});
    let (status, created) = root.post("/api/v1/calendars", body.clone()).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["weekdays"], json!(["SAT", "SUN"]), "normalized");
    assert_eq!(created["yearly"], json!(["01-01"]));
    let id = created["id"].as_i64().expect("id");
    let (status, reply_body) = root.post("/api/v1/calendars", body.clone()).await;
    assert_eq!(status, 409, "{reply_body}");
    for (bad, needle) in [
        (json!({"name": "x", "weekdays": ["FUN"]}), "FUN"),
        (json!({"name": "x", "yearly": ["13-01"]}), "13-01"),
        (json!({"name": "x"}), "at least one day"),
        (json!({"name": " ", "dates": ["2031-01-01"]}), "name"),
        (json!({"name": "x", "ranges": [{"from": "2031-02-03", "to": "2031-02-01"}]}), "ends before"),
    ] {
        let (status, refused) = root.post("/api/v1/calendars", bad).await;
        assert_eq!(status, 400, "{refused}");
        assert!(refused["msg"].as_str().unwrap_or_default().contains(needle), "{refused}");
    }

    let (status, listed) = alice.get("/api/v1/calendars").await;
    assert_eq!((status, listed[0]["name"].clone()), (200, json!("rest-days")));
    let (status, _) = alice.post("/api/v1/calendars", json!({"name": "mine", "dates": ["2031-01-01"]})).await;
    assert_eq!(status, 403, "normal users do not manage calendars");
    let (status, _) = alice.delete(&format!("/api/v1/calendars/{id}")).await;
    assert_eq!(status, 403);

    let mut job = form(group.0);
    job["neverOn"] = json!([id]);
    let (status, created_job) = root.post("/api/v1/jobs", job).await;
    assert_eq!(status, 201, "{created_job}");
    let (status, conflict) = root.delete(&format!("/api/v1/calendars/{id}")).await;
    assert_eq!(status, 409, "{conflict}");
    assert!(
        conflict["msg"].as_str().unwrap_or_default().contains(&created_job["id"].to_string()),
        "{conflict}"
    );
    root.delete(&format!("/api/v1/jobs/{}", created_job["id"])).await;
    let (status, _) = root.delete(&format!("/api/v1/calendars/{id}")).await;
    assert_eq!(status, 204);
    let (status, _) = root.get(&format!("/api/v1/calendars/{id}")).await;
    assert_eq!(status, 404);
    Ok(())
}

#[tokio::test]
async fn job_rules_shape_preview_start_and_reschedule() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("cal-jobs").await;
    let root = env.login("root").await;
    let (_, weekend) =
        root.post("/api/v1/calendars", json!({"name": "weekend", "weekdays": ["SAT", "SUN"]})).await;
    let weekend = weekend["id"].as_i64().expect("id");

    // The preview: hourly, never on weekends, not between 00:00 and 06:00 (UTC).
    let query = format!(
        "/api/v1/schedule/next?scheduleType=CRON&scheduleConf=0%200%20*%20*%20*%20%3F&timeZone=UTC&neverOn={weekend}&exclusionWindows=00:00-06:00"
    );
    let (status, preview) = root.get(&query).await;
    assert_eq!(status, 200, "{preview}");
    let previewed = times(&preview["times"]);
    assert_eq!(previewed.len(), 5);
    for t in &previewed {
        assert!(!matches!(t.weekday(), Weekday::Sat | Weekday::Sun) && t.hour() >= 6, "{t} is excluded");
    }
    let (status, refused) = root.get(&format!("{query}&onlyOn=999")).await;
    assert_eq!(status, 400, "{refused}");

    let mut body = form(group.0);
    body["scheduleConf"] = json!("0 0 * * * ?");
    body["timeZone"] = json!("UTC");
    body["neverOn"] = json!([weekend]);
    body["exclusionWindows"] = json!(["00:00-06:00"]);
    let (status, job) = root.post("/api/v1/jobs", body.clone()).await;
    assert_eq!(status, 201, "{job}");
    assert_eq!(
        (job["neverOn"].clone(), job["exclusionWindows"].clone()),
        (json!([weekend]), json!(["00:00-06:00"]))
    );
    let id = job["id"].as_i64().expect("id");
    let (_, started) = root.post(&format!("/api/v1/jobs/{id}/start"), json!({})).await;
    let next = DateTime::from_timestamp_millis(started["triggerNextTime"].as_i64().unwrap_or_default())
        .expect("next");
    assert!(!matches!(next.weekday(), Weekday::Sat | Weekday::Sun) && next.hour() >= 6, "started at {next}");

    // Left out, the rules stay; given, they replace the job's.
    let mut plain = body.clone();
    for field in ["neverOn", "exclusionWindows"] {
        plain.as_object_mut().map(|o| o.remove(field));
    }
    let (_, kept) = root.put(&format!("/api/v1/jobs/{id}"), plain).await;
    assert_eq!(kept["exclusionWindows"], json!(["00:00-06:00"]), "{kept}");
    for (field, bad, needle) in [
        ("exclusionWindows", json!(["25:00-01:00"]), "25:00-01:00"),
        ("exclusionWindows", json!(["10:00-10:00"]), "empty"),
        ("onlyOn", json!([999_999]), "calendar 999999 does not exist"),
        ("onlyOn", json!([weekend]), "also in onlyOn"),
    ] {
        let mut edit = form(group.0);
        edit[field] = bad;
        let (status, refused) = root.put(&format!("/api/v1/jobs/{id}"), edit).await;
        assert_eq!(status, 400, "{field}: {refused}");
        assert!(refused["msg"].as_str().unwrap_or_default().contains(needle), "{refused}");
    }

    // Only on one far date; moving that date moves the running job's next fire.
    let (_, one_day) =
        root.post("/api/v1/calendars", json!({"name": "one-day", "dates": ["2031-03-03"]})).await;
    let one_day = one_day["id"].as_i64().expect("id");
    let mut edit = form(group.0);
    edit["scheduleConf"] = json!("0 0 9 * * ?");
    edit["timeZone"] = json!("UTC");
    edit["onlyOn"] = json!([one_day]);
    edit["neverOn"] = json!([]);
    edit["exclusionWindows"] = json!([]);
    let (status, edited) = root.put(&format!("/api/v1/jobs/{id}"), edit).await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(
        edited["triggerNextTime"],
        json!(DateTime::parse_from_rfc3339("2031-03-03T09:00:00Z")?.timestamp_millis())
    );
    let (status, _) = root
        .put(&format!("/api/v1/calendars/{one_day}"), json!({"name": "one-day", "dates": ["2031-04-07"]}))
        .await;
    assert_eq!(status, 200);
    let (_, moved) = root.get(&format!("/api/v1/jobs/{id}")).await;
    assert_eq!(
        moved["triggerNextTime"],
        json!(DateTime::parse_from_rfc3339("2031-04-07T09:00:00Z")?.timestamp_millis())
    );
    assert_eq!(moved["triggerStatus"], json!(1));
    Ok(())
}

const ICS: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nX-WR-CALNAME:Company holidays\r\n\
BEGIN:VEVENT\r\nUID:a\r\nSUMMARY:Founders day\r\nDTSTART;VALUE=DATE:20310505\r\nDTEND;VALUE=DATE:20310506\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:b\r\nSUMMARY:Christmas\r\nDTSTART;VALUE=DATE:20301225\r\nRRULE:FREQ=YEARLY\r\nEND:VEVENT\r\n\
BEGIN:VEVENT\r\nUID:c\r\nSUMMARY:Payroll\r\nDTSTART;VALUE=DATE:20310101\r\nRRULE:FREQ=MONTHLY\r\nEND:VEVENT\r\n\
END:VCALENDAR\r\n";

#[tokio::test]
async fn ics_files_create_or_replace_a_calendar() -> anyhow::Result<()> {
    let env = Env::start().await?;
    env.admin_user("root").await;
    let group = env.group("ics-app").await;
    env.normal_user("bob", &[group]).await;
    let (root, bob) = (env.login("root").await, env.login("bob").await);
    let send = |client: &super::Client, path: &str, body: &'static str| {
        client.request(Method::POST, path).header("content-type", "text/calendar").body(body).send()
    };

    let (status, imported) = reply(send(&root, "/api/v1/calendars/import?name=company", ICS).await?).await;
    assert_eq!(status, 200, "{imported}");
    assert_eq!((imported["created"].clone(), imported["imported"].clone()), (json!(true), json!(2)));
    assert_eq!(imported["calendar"]["dates"], json!(["2031-05-05"]));
    assert_eq!(imported["calendar"]["yearly"], json!(["12-25"]));
    assert_eq!(imported["calendar"]["description"], json!("Company holidays"));
    let skipped = imported["skipped"].to_string();
    assert!(skipped.contains("Payroll") && skipped.contains("FREQ=MONTHLY"), "{skipped}");

    let (status, again) = reply(send(&root, "/api/v1/calendars/import?name=company", ICS).await?).await;
    assert_eq!((status, again["created"].clone()), (200, json!(false)), "{again}");
    let (_, listed) = root.get("/api/v1/calendars").await;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "replaced, not duplicated");

    let (status, refused) = reply(send(&root, "/api/v1/calendars/import?name=junk", "hello").await?).await;
    assert_eq!(status, 400, "{refused}");
    assert!(refused["msg"].as_str().unwrap_or_default().contains("iCalendar"), "{refused}");
    let (status, _) = reply(send(&bob, "/api/v1/calendars/import?name=bobs", ICS).await?).await;
    assert_eq!(status, 403);
    Ok(())
}

//! Contract checks for groups, the registry, jobs, GLUE history, users and Wasm modules.

use anyhow::ensure;
use jobwheel_admin::domain::Priority;

use jobwheel_admin::store::{
    GroupRow, HISTORY_KEPT_PER_JOB, JobFilter, LogClear, NewGlueHistory, NewLog, NewWasmVersion, Page,
    RegistryKey, User, UserFilter,
};

use crate::store::{Admins, at, group, job};

pub(crate) async fn check(admins: &Admins) -> anyhow::Result<()> {
    groups(admins).await?;
    group_tokens(admins).await?;
    tags(admins).await?;
    priorities(admins).await?;
    registry(admins).await?;
    jobs(admins).await?;
    job_epoch(admins).await?;
    glue_history(admins).await?;
    users(admins).await?;
    wasm(admins).await?;
    Ok(())
}

async fn groups(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let zeta = group(&**a, "zeta-app").await?;
    let alpha = group(&**a, "alpha-app").await?;
    let listed: Vec<String> = b.list_groups().await?.into_iter().map(|g| g.group.app_name).collect();
    ensure!(listed == ["alpha-app", "zeta-app"], "ordered by app_name: {listed:?}");

    let mut changed = a.load_group(zeta).await?.expect("added group").group;
    changed.title = "Zeta 执行器".to_owned();
    changed.address_type = 1;
    changed.address_list = Some("http://10.0.0.1:9999/,http://10.0.0.2:9999/".to_owned());
    changed.update_time = Some(at("2030-02-03T04:05:06Z"));
    ensure!(a.update_group(zeta, &changed).await?);
    ensure!(
        b.load_group(zeta).await? == Some(GroupRow { id: zeta, group: changed.clone(), max_running: None })
    );

    // The cap on runs in flight: set, replaced, listed with the group, removed; none for a
    // group that does not exist.
    a.set_group_cap(zeta, Some(3)).await?;
    a.set_group_cap(zeta, Some(2)).await?;
    ensure!(b.load_group(zeta).await?.and_then(|g| g.max_running) == Some(2));
    ensure!(b.list_groups().await?.iter().any(|g| g.id == zeta && g.max_running == Some(2)));
    a.set_group_cap(zeta, None).await?;
    ensure!(b.load_group(zeta).await?.and_then(|g| g.max_running).is_none());
    a.set_group_cap(jobwheel_admin::store::GroupId(i32::MAX), Some(1)).await?;
    a.set_group_cap(zeta, Some(5)).await?;

    // Deleting a group removes its registrations (upstream ≥ 3.3.1), not other groups'.
    let key = |app: &str| RegistryKey {
        registry_group: "EXECUTOR".to_owned(),
        registry_key: app.to_owned(),
        registry_value: "http://10.0.0.9:9999/".to_owned(),
    };
    a.registry_upsert(&key("alpha-app"), at("2030-01-01T00:00:00Z")).await?;
    a.registry_upsert(&key("zeta-app"), at("2030-01-01T00:00:00Z")).await?;
    ensure!(a.delete_group(alpha).await?);
    ensure!(!a.delete_group(alpha).await?, "second delete finds nothing");
    ensure!(b.load_group(alpha).await?.is_none());
    let alive = a.alive_registry(at("2029-12-31T00:00:00Z")).await?;
    ensure!(alive.iter().all(|r| r.registry_key != "alpha-app"), "{alive:?}");
    ensure!(alive.iter().any(|r| r.registry_key == "zeta-app"), "{alive:?}");
    ensure!(a.delete_group(zeta).await?);
    ensure!(!a.update_group(zeta, &changed).await?, "update of a deleted group");
    ensure!(b.list_groups().await?.is_empty());
    ensure!(a.alive_registry(at("2029-12-31T00:00:00Z")).await?.is_empty());
    Ok(())
}

/// A group's own token (stored sealed; the store keeps what it is given): set, replaced, listed
/// with the AppName, nothing for a missing group, cleared, gone with its group; and which
/// group's jobs use a module.
async fn group_tokens(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    use jobwheel_admin::store::StoredToken;
    let sealed = |s: &str| StoredToken::Sealed(s.to_owned());
    let own = group(&**a, "token-app").await?;
    let plain = group(&**a, "plain-app").await?;
    ensure!(b.group_tokens().await?.is_empty());
    ensure!(a.set_group_token(own, Some(&sealed("sealed-1")), 1).await?);
    ensure!(a.set_group_token(own, Some(&sealed("sealed-2")), 2).await?, "replaced");
    let listed: Vec<(i32, String, StoredToken)> =
        b.group_tokens().await?.into_iter().map(|t| (t.group_id.0, t.app_name, t.token)).collect();
    ensure!(listed == [(own.0, "token-app".to_owned(), sealed("sealed-2"))], "{listed:?}");
    ensure!(
        !a.set_group_token(jobwheel_admin::store::GroupId(i32::MAX), Some(&sealed("x")), 3).await?,
        "no such group"
    );
    ensure!(a.set_group_token(plain, None, 4).await?, "clearing nothing is fine");
    ensure!(!a.set_group_token(jobwheel_admin::store::GroupId(i32::MAX), None, 4).await?);

    let module = a.put_wasm_module(b"\0asm\x01\0\0\0 token", 5).await?.digest;
    let used = a.add_job(&job(own, "uses a module")).await?;
    let version = NewWasmVersion {
        job_id: used,
        digest: module.clone(),
        uploader: None,
        remark: None,
        created_at_ms: 5,
        candidate: false,
    };
    a.add_wasm_version(&version).await?;
    ensure!(b.wasm_module_in_group(&module, own).await?);
    ensure!(!b.wasm_module_in_group(&module, plain).await?, "another group's module");
    ensure!(!b.wasm_module_in_group(&"0".repeat(64), own).await?);
    ensure!(b.wasm_module_groups(&module).await? == [own], "only the groups whose jobs use it");
    ensure!(b.wasm_module_groups(&"0".repeat(64)).await?.is_empty());
    ensure!(b.wasm_module_size(&module).await?.is_some_and(|size| size > 0), "a stored module's size");
    ensure!(b.wasm_module_size(&"0".repeat(64)).await?.is_none());
    // A job's grant, sealed secrets, variables and their history go with it, and a group's
    // with the group (review L1): a later job or group that gets the same id inherits nothing.
    let grant = jobwheel_admin::store::JobGrantRow {
        http_allow: "https://api.example.com".into(),
        ..Default::default()
    };
    a.save_job_grant(used, &grant, 5).await?;
    let job_owner = jobwheel_admin::store::VariableOwner::Job(used);
    let group_owner = jobwheel_admin::store::VariableOwner::Group(own);
    for owner in [job_owner, group_owner] {
        a.put_variable(owner, "TOKEN", true, "sealed-value", 5).await?;
        a.add_grant_history(owner, "root", "set TOKEN", 5).await?;
    }
    ensure!(a.delete_job(used).await?);
    ensure!(b.load_job_grant(used).await?.is_none(), "the grant went with its job");
    ensure!(b.list_variables(job_owner).await?.is_empty(), "the secrets went with their job");
    ensure!(b.list_grant_history(job_owner).await?.is_empty(), "the history went with its job");
    ensure!(b.list_variables(group_owner).await?.len() == 1, "the group's stay while it exists");

    ensure!(a.set_group_token(own, None, 6).await?);
    ensure!(b.group_tokens().await?.is_empty(), "cleared");
    ensure!(a.set_group_token(own, Some(&sealed("sealed-3")), 7).await?);
    ensure!(a.delete_group(own).await?);
    ensure!(b.group_tokens().await?.is_empty(), "gone with its group");
    ensure!(b.list_variables(group_owner).await?.is_empty(), "the group's secrets went with it");
    ensure!(b.list_grant_history(group_owner).await?.is_empty(), "the group's history went with it");
    ensure!(a.delete_group(plain).await?);
    Ok(())
}

/// Job tags: replaced as a set, listed per job, counted (per group), filtering the job list and
/// the search keys, nothing for a missing job, gone with the job.
async fn tags(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let (g1, g2) = (group(&**a, "tags-one").await?, group(&**a, "tags-two").await?);
    let (x, y, z) =
        (a.add_job(&job(g1, "x")).await?, a.add_job(&job(g1, "y")).await?, a.add_job(&job(g2, "z")).await?);
    let tags = |list: &[&str]| list.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
    a.set_job_tags(x, &tags(&["etl", "nightly"])).await?;
    a.set_job_tags(x, &tags(&["etl", "team:ops"])).await?;
    a.set_job_tags(y, &tags(&["etl"])).await?;
    a.set_job_tags(z, &tags(&["nightly"])).await?;
    a.set_job_tags(jobwheel_admin::store::JobId(i32::MAX), &tags(&["ghost"])).await?;
    let listed = b.job_tags(&[x, y, jobwheel_admin::store::JobId(i32::MAX)]).await?;
    ensure!(listed == [(x, "etl".into()), (x, "team:ops".into()), (y, "etl".into())], "{listed:?}");
    let all = b.tag_counts(None).await?;
    ensure!(all == [("etl".into(), 2), ("nightly".into(), 1), ("team:ops".into(), 1)], "{all:?}");
    ensure!(b.tag_counts(Some(g2)).await? == [("nightly".to_owned(), 1)]);
    let etl = JobFilter { tag: Some("etl".to_owned()), ..JobFilter::default() };
    let page = b.page_jobs(&etl, Page { offset: 0, limit: 10 }).await?;
    ensure!(page.total == 2 && page.rows.iter().all(|r| r.job.job_group == g1), "{page:?}");
    let keys: Vec<_> = b.job_search_keys(&etl).await?.into_iter().map(|k| (k.id, k.job_desc)).collect();
    ensure!(keys == [(y, "y".to_owned()), (x, "x".to_owned())], "newest first: {keys:?}");
    a.set_job_tags(x, &[]).await?;
    ensure!(b.job_tags(&[x]).await?.is_empty(), "cleared");
    for id in [x, y, z] {
        ensure!(a.delete_job(id).await?);
    }
    ensure!(b.tag_counts(None).await?.is_empty(), "gone with their jobs");
    ensure!(a.delete_group(g1).await? && a.delete_group(g2).await?);
    Ok(())
}

/// A job's priority: none by default, set, replaced, cleared, loaded with the job (one and
/// many), nothing for a missing job, gone with the job.
async fn priorities(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let g = group(&**a, "prio-app").await?;
    let id = a.add_job(&job(g, "prio")).await?;
    ensure!(b.load_job(id).await?.expect("job").priority == Priority::Normal);
    a.set_job_priority(id, Some("LOW")).await?;
    a.set_job_priority(id, Some("HIGH")).await?;
    ensure!(b.load_jobs(&[id]).await?[0].priority == Priority::High, "replaced, batch load");
    a.set_job_priority(jobwheel_admin::store::JobId(i32::MAX), Some("HIGH")).await?;
    a.set_job_priority(id, None).await?;
    ensure!(b.load_job(id).await?.expect("job").priority == Priority::Normal, "cleared");
    a.set_job_priority(id, Some("LOW")).await?;
    ensure!(a.delete_job(id).await? && a.delete_group(g).await?);
    Ok(())
}

async fn registry(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let key = |value: &str| RegistryKey {
        registry_group: "EXECUTOR".to_owned(),
        registry_key: "reg-app".to_owned(),
        registry_value: value.to_owned(),
    };
    let t0 = at("2030-01-01T00:00:00Z");
    let t1 = at("2030-01-01T00:01:00Z");
    a.registry_upsert(&key("http://a:1/"), t0).await?;
    b.registry_upsert(&key("http://b:1/"), t0).await?;
    // A repeated heartbeat refreshes the one row (unique i_g_k_v) instead of adding one.
    a.registry_upsert(&key("http://a:1/"), t1).await?;
    let alive = b.alive_registry(at("2029-12-31T23:59:00Z")).await?;
    ensure!(alive.len() == 2, "{alive:?}");
    let row_a = alive.iter().find(|r| r.registry_value == "http://a:1/").expect("a registered");
    ensure!(row_a.update_time == Some(t1) && row_a.registry_key == "reg-app");
    // `alive_after` is exclusive, like upstream's `update_time > now - 90 s`.
    let later = a.alive_registry(t0).await?;
    ensure!(later.len() == 1 && later[0].registry_value == "http://a:1/", "{later:?}");

    ensure!(a.remove_dead_registry(t1).await? == 1, "only b's row is older than t1");
    ensure!(b.registry_remove(&key("http://a:1/")).await? == 1);
    ensure!(b.registry_remove(&key("http://a:1/")).await? == 0);
    ensure!(a.alive_registry(at("2000-01-01T00:00:00Z")).await?.is_empty());
    Ok(())
}

async fn jobs(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let g1 = group(&**a, "jobs-one").await?;
    let g2 = group(&**a, "jobs-two").await?;
    let first = job(g1, "Nightly Report");
    let id1 = a.add_job(&first).await?;
    let mut second = job(g1, "hourly sync");
    second.author = Some("Bob".to_owned());
    second.executor_handler = Some("syncHandler".to_owned());
    let id2 = a.add_job(&second).await?;
    let id3 = a.add_job(&job(g2, "other group")).await?;
    ensure!(id1 < id2 && id2 < id3);
    ensure!(b.load_job(id1).await?.map(|r| r.job) == Some(first.clone()), "round trip");

    let page = |filter: JobFilter| async move {
        let paged = b.page_jobs(&filter, Page { offset: 0, limit: 10 }).await?;
        anyhow::Ok((paged.total, paged.rows.into_iter().map(|r| r.id).collect::<Vec<_>>()))
    };
    let by_group = JobFilter { job_group: Some(g1), ..JobFilter::default() };
    ensure!(page(by_group.clone()).await? == (2, vec![id2, id1]), "newest first");
    let desc = JobFilter { job_desc: Some("REPORT".to_owned()), ..by_group.clone() };
    ensure!(page(desc).await? == (1, vec![id1]), "desc LIKE ignores case");
    let author = JobFilter { author: Some("bo".to_owned()), ..JobFilter::default() };
    ensure!(page(author).await? == (1, vec![id2]));
    let handler = JobFilter { executor_handler: Some("sync".to_owned()), ..JobFilter::default() };
    ensure!(page(handler).await? == (1, vec![id2]));
    let stopped = JobFilter { trigger_status: Some(0), ..JobFilter::default() };
    ensure!(page(stopped).await?.0 == 3);
    let second_page = b.page_jobs(&by_group, Page { offset: 1, limit: 1 }).await?;
    ensure!(second_page.total == 2 && second_page.rows.len() == 1 && second_page.rows[0].id == id1);

    // start / stop (upstream §5.8).
    let now = at("2030-01-03T00:00:00Z");
    ensure!(a.start_job(id1, 1_893_456_000_000, now).await?);
    let started = b.load_job(id1).await?.expect("job").job;
    ensure!(started.trigger_status == 1 && started.trigger_last_time == 0);
    ensure!(started.trigger_next_time == 1_893_456_000_000 && started.update_time == Some(now));
    let running = JobFilter { trigger_status: Some(1), ..JobFilter::default() };
    ensure!(page(running).await? == (1, vec![id1]));
    ensure!(a.stop_job(id1, now).await?);
    let stopped = b.load_job(id1).await?.expect("job").job;
    ensure!(stopped.trigger_status == 0 && stopped.trigger_next_time == 0);

    // A full update rewrites everything but add_time.
    let mut changed = job(g2, "renamed");
    changed.add_time = Some(at("1999-01-01T00:00:00Z"));
    changed.glue_type = "GLUE_SHELL".into();
    changed.glue_source = Some("echo hi".to_owned());
    changed.child_jobid = Some(format!("{id2}"));
    changed.executor_timeout = 30;
    ensure!(a.update_job(id1, &changed).await?);
    let updated = b.load_job(id1).await?.expect("job").job;
    ensure!(updated == crate::store::store::Job { add_time: first.add_time, ..changed.clone() });

    // Deleting a job takes its logs and histories with it, and nothing of other jobs.
    let log = NewLog { job_group: g2, job_id: id1, trigger_time: now };
    a.insert_log(&log).await?;
    let other_log = a.insert_log(&NewLog { job_id: id3, ..log }).await?;
    let glue = NewGlueHistory {
        job_id: id1,
        glue_type: Some("GLUE_SHELL".into()),
        glue_source: Some("echo".to_owned()),
        glue_remark: "v1".to_owned(),
        now,
    };
    a.add_glue_history(&glue).await?;
    ensure!(a.delete_job(id1).await?);
    ensure!(!a.delete_job(id1).await?);
    ensure!(b.load_job(id1).await?.is_none());
    ensure!(b.list_glue_history(id1).await?.is_empty());
    ensure!(b.load_log(other_log).await?.is_some());
    let all_of_g2 = crate::store::store::LogFilter { job_group: Some(g2), ..Default::default() };
    ensure!(b.page_logs(&all_of_g2, Page { offset: 0, limit: 10 }).await?.total == 1);
    ensure!(!a.update_job(id1, &changed).await?);

    for id in [id2, id3] {
        ensure!(a.delete_job(id).await?);
    }
    a.clear_logs(&LogClear { job_group: Some(g2), ..LogClear::default() }).await?;
    a.delete_group(g1).await?;
    a.delete_group(g2).await?;
    Ok(())
}

/// Every job edit moves the job epoch, as the other admin reads it; reads and the pre-read's
/// own trigger-time writes do not (a trigger fires with its pre-read's row while it stands).
async fn job_epoch(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let g = group(&**a, "epoch").await?;
    let id = a.add_job(&job(g, "epoch job")).await?;
    let now = at("2030-01-03T00:00:00Z");
    let mut last = b.job_epoch().await?;
    let edited = job(g, "epoch job, edited");
    for edit in ["update", "start", "stop", "time zone", "priority", "delete"] {
        match edit {
            "update" => ensure!(a.update_job(id, &edited).await?),
            "start" => ensure!(a.start_job(id, 1_893_456_000_000, now).await?),
            "stop" => ensure!(a.stop_job(id, now).await?),
            "time zone" => a.set_job_time_zone(id, Some("Asia/Shanghai")).await?,
            "priority" => a.set_job_priority(id, Some("HIGH")).await?,
            _ => ensure!(a.delete_job(id).await?),
        }
        let epoch = b.job_epoch().await?;
        ensure!(epoch > last, "{edit} did not move the job epoch ({last} → {epoch})");
        last = epoch;
    }
    b.load_job(id).await?;
    b.page_jobs(&JobFilter::default(), Page { offset: 0, limit: 10 }).await?;
    let mut tx = a.begin_schedule().await?;
    tx.due_jobs(i64::MAX, 10).await?;
    tx.commit().await?;
    ensure!(b.job_epoch().await? == last, "reads moved the job epoch");
    a.delete_group(g).await?;
    Ok(())
}

async fn glue_history(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let g = group(&**a, "glue-app").await?;
    let job_id = a.add_job(&job(g, "glue job")).await?;
    let other = a.add_job(&job(g, "other glue job")).await?;
    let base = at("2030-01-01T00:00:00Z");
    let total = HISTORY_KEPT_PER_JOB + 3;
    for i in 0..total {
        let glue = NewGlueHistory {
            job_id,
            glue_type: Some("GLUE_PYTHON".into()),
            glue_source: Some(format!("print({i})")),
            glue_remark: format!("v{i}"),
            now: base + chrono::Duration::seconds(i.into()),
        };
        a.add_glue_history(&glue).await?;
    }
    let kept_other = NewGlueHistory {
        job_id: other,
        glue_type: None,
        glue_source: None,
        glue_remark: "other".to_owned(),
        now: base,
    };
    b.add_glue_history(&kept_other).await?;
    let history = b.list_glue_history(job_id).await?;
    ensure!(history.len() == HISTORY_KEPT_PER_JOB as usize, "kept {}", history.len());
    ensure!(history[0].glue_remark == format!("v{}", total - 1), "newest first");
    ensure!(history.last().map(|h| h.glue_remark.as_str()) == Some("v3"), "oldest kept is v3");
    ensure!(history[0].update_time == Some(base + chrono::Duration::seconds((total - 1).into())));
    ensure!(history[0].glue_source.as_deref() == Some("print(32)"));
    let other_history = b.list_glue_history(other).await?;
    ensure!(other_history.len() == 1 && other_history[0].glue_type.is_none());
    a.delete_job(job_id).await?;
    a.delete_job(other).await?;
    a.delete_group(g).await?;
    Ok(())
}

async fn users(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    let user = |name: &str, role: i16| User {
        username: name.to_owned(),
        password: format!("hash-of-{name}"),
        token: None,
        role,
        permission: Some("1,2".to_owned()),
    };
    let root = a.add_user(&user("root", 1)).await?;
    let carol = a.add_user(&user("carol", 0)).await?;
    let dave = a.add_user(&user("dave", 0)).await?;
    match b.add_user(&user("carol", 1)).await {
        Err(crate::store::store::StoreError::Database(e)) => ensure!(
            e.as_database_error().is_some_and(|d| d.is_unique_violation()),
            "duplicate username must be a unique violation: {e}"
        ),
        other => anyhow::bail!("duplicate username accepted: {other:?}"),
    }
    ensure!(b.find_user("carol").await?.map(|u| u.id) == Some(carol));
    ensure!(b.find_user("nobody").await?.is_none());

    let mut changed = user("carol", 1);
    changed.token = Some("sig".to_owned());
    changed.permission = None;
    ensure!(a.update_user(carol, &changed).await?);
    ensure!(b.load_user(carol).await?.map(|u| u.user) == Some(changed));

    let all = b.page_users(&UserFilter::default(), Page { offset: 0, limit: 10 }).await?;
    let names: Vec<_> = all.rows.iter().map(|u| u.user.username.as_str()).collect();
    ensure!(all.total == 3 && names == ["carol", "dave", "root"], "{names:?}");
    let admins_only = UserFilter { role: Some(1), ..UserFilter::default() };
    ensure!(b.page_users(&admins_only, Page { offset: 0, limit: 10 }).await?.total == 2);
    let like = UserFilter { username: Some("AV".to_owned()), role: None };
    let found = b.page_users(&like, Page { offset: 0, limit: 10 }).await?;
    ensure!(found.total == 1 && found.rows[0].id == dave);
    let paged = b.page_users(&UserFilter::default(), Page { offset: 2, limit: 5 }).await?;
    ensure!(paged.total == 3 && paged.rows.len() == 1 && paged.rows[0].id == root);

    for id in [root, carol, dave] {
        ensure!(a.delete_user(id).await?);
    }
    ensure!(!a.delete_user(root).await?);
    ensure!(b.load_user(root).await?.is_none());
    Ok(())
}

async fn wasm(Admins { a, b }: &Admins) -> anyhow::Result<()> {
    // `\0asm` + version 1: the smallest valid module; the digest is its SHA-256.
    let module = b"\0asm\x01\0\0\0".to_vec();
    let digest = "93a44bbb96c751218e4c00d479e4c14358122a389acca16205b1e4d0dc5f9476";
    let first = a.put_wasm_module(&module, 1_000).await?;
    ensure!(first.digest == digest && first.inserted, "{first:?}");
    let again = b.put_wasm_module(&module, 2_000).await?;
    ensure!(again.digest == digest && !again.inserted, "idempotent by digest: {again:?}");
    let stored = b.get_wasm_module(digest).await?.expect("stored module");
    ensure!(stored.bytes == module && stored.size == 8 && stored.created_at_ms == 1_000);
    ensure!(b.get_wasm_module(&"0".repeat(64)).await?.is_none());
    let big: Vec<u8> = (0..200_000_u32).map(|i| (i % 251) as u8).collect();
    let big_put = a.put_wasm_module(&big, 3_000).await?;
    ensure!(b.get_wasm_module(&big_put.digest).await?.map(|m| m.bytes) == Some(big));

    let g = group(&**a, "wasm-app").await?;
    let job_id = a.add_job(&job(g, "wasm job")).await?;
    ensure!(b.current_wasm_module(job_id).await?.is_none(), "no version, no module");
    let total = i64::from(HISTORY_KEPT_PER_JOB) + 2;
    for i in 0..total {
        let version = NewWasmVersion {
            job_id,
            digest: digest.to_owned(),
            uploader: Some("alice".to_owned()),
            remark: Some(format!("r{i}")),
            created_at_ms: 10_000 + i,
            candidate: false,
        };
        a.add_wasm_version(&version).await?;
    }
    let versions = b.list_wasm_versions(job_id).await?;
    ensure!(versions.len() == HISTORY_KEPT_PER_JOB as usize, "kept {}", versions.len());
    ensure!(versions[0].remark.as_deref() == Some(&*format!("r{}", total - 1)));
    ensure!(versions.last().and_then(|v| v.remark.as_deref()) == Some("r2"));
    ensure!(versions.iter().all(|v| v.job_id == job_id && v.digest == digest));
    // The trigger path's view: the newest version's digest and size, without the bytes.
    let newer = NewWasmVersion {
        job_id,
        digest: big_put.digest.clone(),
        uploader: None,
        remark: None,
        created_at_ms: 20_000,
        candidate: false,
    };
    a.add_wasm_version(&newer).await?;
    let current = b.current_wasm_module(job_id).await?.expect("a current module");
    ensure!(current.digest == big_put.digest && current.size == 200_000, "{current:?}");
    a.delete_job(job_id).await?;
    ensure!(b.list_wasm_versions(job_id).await?.is_empty(), "versions go with the job");
    ensure!(b.get_wasm_module(digest).await?.is_some(), "modules are shared, not deleted");
    a.delete_group(g).await?;
    Ok(())
}

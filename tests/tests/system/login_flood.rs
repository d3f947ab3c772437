//! Logins under attack, against a real `jobwheel-admin` process (security review M1, M2):
//! concurrent guesses for one account cannot pass the throttle together, a flood of logins
//! from many addresses queues for the password hasher instead of filling memory or stalling
//! the admin, and throttled logins do not flood the audit log.

use std::time::Duration;

use anyhow::ensure;
use jobwheel_admin::store::{AuditFilter, Page, User};
use jobwheel_tests::cluster::Daemon;
use serde_json::json;

/// Peak RSS the admin may reach during the flood. Four argon2 runs at once take 4 × 19 MiB;
/// one per request (the blocking pool's 512 threads) would take up to ~10 GiB.
const MAX_PEAK_RSS_MIB: u64 = 400;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_flood_is_throttled_bounded_and_audited_in_aggregate() -> anyhow::Result<()> {
    // The flood takes both cores: the timing-sensitive stacks wait for it.
    let _alone = crate::CPU.write().await;
    let dir = tempfile::tempdir()?;
    let url = format!("sqlite://{}", dir.path().join("flood.db").display());
    let store = jobwheel_admin::store::connect(&url).await?;
    let password = jobwheel_admin::secrets::hash_password("right-password")?;
    let user = User { username: "alice".into(), password, token: None, role: 0, permission: None };
    store.add_user(&user).await?;
    let admin =
        Daemon::start_admin(&url, &dir.path().join("admin"), &["--trusted-proxies", "127.0.0.1"], &[])
            .await?;
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build()?;
    let login = |username: String, password: &'static str, client: Option<String>| {
        let mut request = http
            .post(format!("{}/api/v1/session", admin.base))
            .json(&json!({"username": username, "password": password}));
        if let Some(client) = client {
            request = request.header("x-forwarded-for", client);
        }
        async move { request.send().await.map(|r| r.status().as_u16()).unwrap_or(0) }
    };

    // 50 guesses for one account at once: at most the throttle's 5 reach the password check.
    let guesses = (0..50).map(|_| login("alice".into(), "wrong", None));
    let statuses = futures_join(guesses).await;
    let wrong = statuses.iter().filter(|s| **s == 401).count();
    let throttled = statuses.iter().filter(|s| **s == 429).count();
    ensure!(wrong <= 5 && wrong + throttled == 50, "401 × {wrong}, 429 × {throttled}: {statuses:?}");

    // 300 more from that client: throttled, and folded into one audit row.
    let more = (0..300).map(|_| login("alice".into(), "wrong", None));
    ensure!(futures_join(more).await.iter().all(|s| *s == 429), "still throttled");

    // 600 logins with random names from 600 addresses: every one passes the throttle and
    // needs an argon2 run. The admin stays ready and its memory bounded meanwhile.
    let flood = (0..600)
        .map(|n| login(format!("nobody-{n}"), "guess", Some(format!("10.9.{}.{}", n / 250, n % 250))));
    let flood = tokio::spawn(futures_join(flood.collect::<Vec<_>>()));
    let mut ready_checks = 0;
    while !flood.is_finished() {
        let ready =
            tokio::time::timeout(Duration::from_secs(2), http.get(format!("{}/readyz", admin.base)).send())
                .await
                .map_or(0, |r| r.map_or(0, |r| r.status().as_u16()));
        ensure!(ready == 200, "/readyz answered {ready} during the flood (0: not within 2 s)");
        ready_checks += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let statuses = flood.await?;
    ensure!(statuses.iter().all(|s| *s == 401 || *s == 429), "{statuses:?}");
    let peak = peak_rss_mib(admin.pid().unwrap_or_default())?;
    ensure!(peak < MAX_PEAK_RSS_MIB, "the admin's peak RSS was {peak} MiB during the flood");

    let audit = |action: &str| {
        let filter = AuditFilter {
            username: Some("alice".into()),
            action_prefix: Some(action.to_owned()),
            ..AuditFilter::default()
        };
        let store = store.clone();
        async move { store.page_audit(&filter, Page { offset: 0, limit: 1000 }).await.map(|p| p.total) }
    };
    let failed = audit("session.login_failed").await?;
    let refused = audit("session.login_refused").await?;
    ensure!(failed <= 5 && refused == 1, "audit rows for alice: {failed} failed, {refused} refused");
    ensure!(ready_checks > 0, "the flood ended before /readyz was asked");
    Ok(())
}

async fn futures_join<F: std::future::Future<Output = u16> + Send + 'static>(
    futures: impl IntoIterator<Item = F>,
) -> Vec<u16> {
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut statuses = Vec::with_capacity(handles.len());
    for handle in handles {
        statuses.push(handle.await.unwrap_or(0));
    }
    statuses
}

fn peak_rss_mib(pid: u32) -> anyhow::Result<u64> {
    Ok(jobwheel_tests::procs::peak_rss_kib(pid)? / 1024)
}

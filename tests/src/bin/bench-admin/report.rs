//! What a benchmark run prints at its end: the fires of the window counted from the
//! database's books (`jobwheel_tests::outcomes`), their lateness, and the admin's cost.

use std::collections::HashMap;
use std::time::Duration;

use super::{Args, Cost, end_to_end, setup};
use crate::measure::percentiles;
use crate::setup::{Mode, now_ms};

#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
pub(crate) async fn report_manual(url: &str, args: &Args, accepted: u64, cost: Cost) -> anyhow::Result<()> {
    // Every accepted trigger must end with a log row that triggered and called back.
    let deadline = now_ms() + 60_000;
    let (logs, triggered, succeeded) = loop {
        let totals = jobwheel_tests::outcomes::log_totals(url).await?;
        if totals.2 >= totals.0 && totals.0 > 0 || now_ms() > deadline {
            break totals;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    println!("mode manual, {} jobs, {} executor(s), {} s window", args.jobs, args.executors, args.duration);
    println!(
        "  API triggers accepted in the window: {accepted} ({:.0}/s)",
        accepted as f64 / args.duration as f64
    );
    println!(
        "  log rows (whole run) {logs}, triggered 200 {triggered}, callbacks 200 {succeeded}, lost {}",
        logs - succeeded
    );
    println!(
        "  admin CPU {:.2} cores, RSS {:.0} MiB (peak {:.0} MiB)",
        cost.cores, cost.rss_mib, cost.peak_rss_mib
    );
    Ok(())
}

/// Fires of `jobs` cron jobs (job i at every second s with s mod `period` = i mod `period`)
/// whose fire second lies in `[from_ms, to_ms)`.
pub(crate) fn cron_fires_in(jobs: u64, period: u64, from_ms: i64, to_ms: i64) -> u64 {
    let first =
        u64::try_from(from_ms.div_euclid(1000) + i64::from(from_ms.rem_euclid(1000) != 0)).unwrap_or(0);
    let end = u64::try_from(to_ms.div_euclid(1000) + i64::from(to_ms.rem_euclid(1000) != 0)).unwrap_or(0);
    (first..end).map(|second| jobs / period + u64::from(second % period < jobs % period)).sum()
}

#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
pub(crate) async fn report_scheduled(
    url: &str,
    args: &Args,
    (from, to): (i64, i64),
    arrivals: &setup::Arrivals,
    processes: Option<&end_to_end::ExecutorProcesses>,
    cost: Cost,
) -> anyhow::Result<()> {
    // Wait for the window's last runs to call back (bounded).
    let deadline = now_ms() + 60_000;
    let claims = loop {
        let claims = jobwheel_tests::outcomes::claims(url, from, to).await?;
        let settled =
            claims.iter().all(|c| c.status != 0 && (c.status == 2 || c.handle_code.unwrap_or(0) > 0));
        if settled || now_ms() > deadline {
            break claims;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    // Every settled run has started, so its job-log file exists.
    if let Some(processes) = processes {
        processes.collect(arrivals, false)?;
    }
    let per_second = match args.mode {
        Mode::FixRate => args.jobs as f64,
        _ => args.jobs as f64 / f64::from(args.cron_period),
    };
    let expected = match args.mode {
        Mode::FixRate => (per_second * args.duration as f64).round() as u64,
        // Job i fires at the seconds s with s mod period = i mod period (setup.rs); when the
        // jobs do not divide evenly, seconds differ by one, so count the window's seconds.
        _ => cron_fires_in(args.jobs as u64, u64::from(args.cron_period), from, to),
    };
    let fired: Vec<_> = claims.iter().filter(|c| c.status == 1).collect();
    let triggered = fired.iter().filter(|c| c.trigger_code == Some(200)).count();
    let succeeded = fired.iter().filter(|c| c.handle_code == Some(200)).count();
    let mut per_job_second: HashMap<(i64, i64), u32> = HashMap::new();
    for c in &fired {
        *per_job_second.entry((c.job_id, c.fire_ms / 1000)).or_default() += 1;
    }
    let doubled = per_job_second.values().filter(|n| **n > 1).count();
    let arrived: HashMap<i64, i64> =
        arrivals.lock().expect("arrivals").iter().map(|a| (a.log_id, a.at_ms)).collect();
    let late: Vec<(i64, i64)> = fired
        .iter()
        .filter_map(|c| c.log_id.and_then(|l| arrived.get(&l)).map(|at| (c.fire_ms, at - c.fire_ms)))
        .collect();
    let mut lateness: Vec<i64> = late.iter().map(|(_, ms)| *ms).collect();
    let mut per_sec: HashMap<i64, u64> = HashMap::new();
    for c in fired.iter().filter(|c| c.handle_code == Some(200)) {
        *per_sec.entry(c.fire_ms / 1000).or_default() += 1;
    }
    let slowest_second = per_sec.values().min().copied().unwrap_or(0);

    println!(
        "mode {:?}, {} jobs, {} executor(s), {} admin(s), {} s window, {url}",
        args.mode, args.jobs, args.executors, args.admins, args.duration
    );
    println!(
        "  scheduled triggers expected {expected} ({per_second:.0}/s); claims {}; fired {}",
        claims.len(),
        fired.len()
    );
    println!(
        "  triggered 200 {triggered}; callbacks 200 {succeeded} ({:.0}/s; slowest second {slowest_second}); doubled {doubled}; lost {}",
        succeeded as f64 / args.duration as f64,
        expected.saturating_sub(succeeded as u64)
    );
    print_lateness_and_cost(&mut lateness, cost);
    print_latest_seconds(&late, from);
    Ok(())
}

/// The five seconds of the window whose triggers arrived latest (their worst lateness), by
/// offset from the window's start: a spike that recurs every 10 s or every minute points at
/// a periodic task (the fail monitor, the report), one that grows at a backlog.
#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
fn print_latest_seconds(late: &[(i64, i64)], from_ms: i64) {
    let mut worst: HashMap<i64, i64> = HashMap::new();
    for (fire_ms, ms) in late {
        let second = worst.entry((fire_ms - from_ms).div_euclid(1000)).or_default();
        *second = (*second).max(*ms);
    }
    let mut seconds: Vec<(i64, i64)> = worst.into_iter().collect();
    seconds.sort_unstable_by_key(|(second, ms)| (std::cmp::Reverse(*ms), *second));
    let listed: Vec<String> = seconds.iter().take(5).map(|(s, ms)| format!("+{s} s: {ms} ms")).collect();
    println!("  latest seconds (max lateness): {}", listed.join(", "));
}

/// The report's last two lines: lateness percentiles over `lateness` (sorted in place) and the
/// admin's cost.
#[allow(clippy::print_stdout, reason = "the benchmark's result is its output")]
pub(crate) fn print_lateness_and_cost(lateness: &mut [i64], cost: Cost) {
    let (p50, p99, max) = percentiles(lateness);
    println!(
        "  lateness (run start on the executor - scheduled) p50 {p50} ms, p99 {p99} ms, max {max} ms over {} runs",
        lateness.len()
    );
    println!(
        "  admin CPU {:.3} cores, RSS {:.0} MiB (peak {:.0} MiB)",
        cost.cores, cost.rss_mib, cost.peak_rss_mib
    );
}

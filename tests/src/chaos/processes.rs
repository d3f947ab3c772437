//! The chaos scenario's processes and how a kill hits them: an admin from outside or at a
//! fault point it is told of through its fault file, an executor from outside, each back after
//! its time down — an admin on its address, an executor alternately on its address and on a
//! new port.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use super::plan::{How, Kill};
use crate::cluster::Daemon;
use crate::now_ms;

/// How long an armed admin has to reach its fault point before it is killed from outside: an
/// admin holding no partitions claims nothing, and one no executor calls back stores nothing.
const FAULT_WAIT: Duration = Duration::from_secs(6);

/// The processes, and which one a kill hits.
pub(super) struct Cluster {
    admins: Vec<Daemon>,
    executors: Vec<Daemon>,
    /// Where each admin's fault file is (`<data>/admin<n>/fault`).
    root: PathBuf,
    /// Executor kills so far: even ones come back on their address, odd ones elsewhere.
    executor_kills: usize,
    /// With one admin: when it was down (killed, until ready again), epoch ms.
    pub(super) scheduler_gaps: Vec<(i64, i64)>,
}

impl Cluster {
    pub(super) fn new(admins: Vec<Daemon>, executors: Vec<Daemon>, root: &Path) -> Cluster {
        Cluster { admins, executors, root: root.to_owned(), executor_kills: 0, scheduler_gaps: Vec::new() }
    }

    pub(super) fn size(&self) -> usize {
        self.admins.len() + self.executors.len()
    }

    /// Carries out `kill`; what it did, for the report.
    pub(super) async fn kill_and_restart(&mut self, kill: &Kill) -> anyhow::Result<String> {
        let admins = self.admins.len();
        let killed_at = now_ms();
        let (daemon, name, elsewhere) = if kill.victim < admins {
            let n = kill.victim;
            let fault_file = self.root.join(format!("admin{n}")).join("fault");
            let daemon = &mut self.admins[n];
            let name = match kill.how {
                How::Outside => {
                    daemon.kill9().await?;
                    format!("admin {n}")
                }
                How::Fault(point) => {
                    std::fs::write(&fault_file, point.name())
                        .with_context(|| format!("arming {}", fault_file.display()))?;
                    let died = daemon.wait_exit(FAULT_WAIT).await?;
                    if !died {
                        daemon.kill9().await?;
                    }
                    // Disarmed before the restart, or the new process would die at once.
                    std::fs::remove_file(&fault_file)?;
                    let reached = if died { "" } else { ", not reached in 6 s: from outside" };
                    format!("admin {n} at {point}{reached}")
                }
            };
            (daemon, name, false)
        } else {
            let n = kill.victim - admins;
            let elsewhere = self.executor_kills % 2 == 1;
            self.executor_kills += 1;
            let how = if elsewhere { "on a new port" } else { "on its address" };
            let daemon = &mut self.executors[n];
            daemon.kill9().await?;
            (daemon, format!("executor {n} (back {how})"), elsewhere)
        };
        tokio::time::sleep(kill.down).await;
        let restarted = if elsewhere { daemon.restart_elsewhere().await } else { daemon.restart().await };
        restarted.with_context(|| format!("restarting {name}"))?;
        if kill.victim < admins && admins == 1 {
            self.scheduler_gaps.push((killed_at, now_ms()));
        }
        Ok(name)
    }

    /// Stops every process with SIGTERM.
    pub(super) async fn stop_all(&mut self) -> anyhow::Result<()> {
        for daemon in self.admins.iter_mut().chain(self.executors.iter_mut()) {
            daemon.stop().await?;
        }
        Ok(())
    }
}

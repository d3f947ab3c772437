//! Keeping every process a script run starts — children, grandchildren, and descendants that
//! left the script's process group (`setsid`, a double fork, `nohup … &`) — so that a timeout,
//! a kill, COVER_EARLY or the script's own exit can stop all of them.
//!
//! A process group is not enough: `setsid` leaves it, and a daemonizing tool's grandchild is
//! re-parented to init, out of sight. Two mechanisms, chosen once per process (`--script-tree`):
//!
//! - **cgroup** (preferred): each run gets its own cgroup v2 directory below the executor's own
//!   cgroup; the child joins it between `fork` and `exec`, before any script code runs, and
//!   nothing a process does can leave it (moving out needs write access to another cgroup).
//!   Stopping writes `1` to `cgroup.kill` (Linux ≥ 5.14), or SIGKILLs `cgroup.procs` until it
//!   is empty. Needs a writable cgroup: root, or systemd's `Delegate=yes` (the shipped unit).
//! - **subreaper** (fallback): the executor makes itself a child subreaper, so an orphaned
//!   descendant is re-parented to it instead of to init, and every run's processes carry a
//!   random marker in their environment. Stopping kills the process group, then every process
//!   that carries the run's marker, and reaps those re-parented here. A descendant that both
//!   leaves the group and clears its environment escapes this mechanism (docs/security.md).

use std::collections::BTreeSet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::config::ScriptTree;

/// The environment variable holding a run's marker (subreaper mode).
pub(crate) const RUN_MARKER_ENV: &str = "XXL_JOB_RUN_MARKER";
/// How long a stop waits for the kernel to empty a run's cgroup.
const EMPTY_WITHIN: Duration = Duration::from_secs(5);

/// How this process contains script runs.
#[derive(Debug)]
enum Containment {
    /// Run cgroups are made in this directory (the executor's own cgroup).
    Cgroup(PathBuf),
    Subreaper,
}

static CONTAINMENT: OnceLock<Containment> = OnceLock::new();
static RUNS: AtomicU64 = AtomicU64::new(0);
/// The interpreters of runs in progress: tokio reaps them, so the orphan reaper must not.
static LEADERS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Chooses the mechanism for this process (the first call wins; later ones change nothing).
pub(crate) fn init(mode: ScriptTree) -> anyhow::Result<&'static str> {
    let chosen = match mode {
        ScriptTree::Subreaper => subreaper()?,
        ScriptTree::Cgroup => Containment::Cgroup(own_cgroup().map_err(|e| {
            anyhow::anyhow!("--script-tree cgroup: {e} (run as root, or under systemd with Delegate=yes)")
        })?),
        ScriptTree::Auto => match own_cgroup() {
            Ok(dir) => Containment::Cgroup(dir),
            Err(reason) => {
                tracing::info!(%reason, "no writable cgroup v2 for script runs; using a child subreaper");
                subreaper()?
            }
        },
    };
    let chosen = CONTAINMENT.get_or_init(|| chosen);
    Ok(match chosen {
        Containment::Cgroup(_) => "cgroup",
        Containment::Subreaper => "subreaper",
    })
}

fn subreaper() -> anyhow::Result<Containment> {
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| anyhow::anyhow!("cannot become a child subreaper: {e}"))?;
    Ok(Containment::Subreaper)
}

/// The executor's own cgroup v2 directory, if it may create run cgroups in it.
fn own_cgroup() -> Result<PathBuf, String> {
    let own = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    let relative = own
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .ok_or("the executor is in no cgroup v2 hierarchy")?;
    let mountinfo =
        std::fs::read_to_string("/proc/self/mountinfo").map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    // Fields: id parent major:minor root mount-point options … - fstype source options.
    let mount = mountinfo
        .lines()
        .find(|line| line.split(" - ").nth(1).is_some_and(|tail| tail.starts_with("cgroup2 ")))
        .and_then(|line| line.split(' ').nth(4))
        .ok_or("no cgroup2 file system is mounted")?;
    let dir = Path::new(mount).join(relative.trim().trim_start_matches('/'));
    let probe = dir.join(format!("jobwheel-probe-{}", std::process::id()));
    std::fs::create_dir(&probe).map_err(|e| format!("cannot create a cgroup in {}: {e}", dir.display()))?;
    let _ = std::fs::remove_dir(&probe);
    Ok(dir)
}

/// The processes of one script run.
pub(crate) struct RunTree {
    /// The run's cgroup directory, or `None` in subreaper mode.
    cgroup: Option<PathBuf>,
    marker: String,
    /// The script's pid (= its process group id) once spawned; cleared when it was reaped and
    /// its group emptied, as the id may then be reused.
    leader: Option<Pid>,
}

impl RunTree {
    /// Prepares `command` so that its process and every descendant belong to a new run tree.
    pub(crate) fn prepare(command: &mut Command) -> anyhow::Result<Self> {
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        let marker = format!("{}-{n}-{}", std::process::id(), nanos());
        command.env(RUN_MARKER_ENV, &marker).process_group(0);
        let cgroup = match CONTAINMENT.get() {
            Some(Containment::Cgroup(parent)) => {
                let dir = parent.join(format!("jobwheel-run-{}-{n}", std::process::id()));
                std::fs::create_dir(&dir)
                    .map_err(|e| anyhow::anyhow!("cannot create the run's cgroup {}: {e}", dir.display()))?;
                join_in_child(command, &dir.join("cgroup.procs"))?;
                Some(dir)
            }
            _ => None,
        };
        Ok(Self { cgroup, marker, leader: None })
    }

    /// Starts the run's script and records it as a leader in one step, under the lock the
    /// orphan reaper holds while it looks ([`reap_orphans`]). Recorded after the spawn instead,
    /// a script that exits at once (`echo`) could be taken for an orphan and reaped by another
    /// run's clean-up in between, and its own run's wait then failed with "No child processes
    /// (os error 10)" — seen once in CI on 2026-12-06.
    pub(crate) fn spawn(&mut self, command: &mut Command) -> std::io::Result<Child> {
        let mut leaders = leaders();
        let child = command.spawn()?;
        self.leader = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
        if let Some(leader) = self.leader {
            leaders.insert(leader.as_raw());
        }
        Ok(child)
    }

    /// Sends `signal` to the script's process group (a polite SIGTERM before [`Self::kill_all`]).
    pub(crate) fn signal_group(&self, signal: Signal) {
        if let Some(leader) = self.leader {
            let _ = killpg(leader, signal);
        }
    }

    /// SIGKILLs every process of the run, wherever it went, and waits (bounded) until none is
    /// left. Call after the script itself was reaped; later calls do nothing.
    pub(crate) fn kill_all(&mut self) {
        self.signal_group(Signal::SIGKILL);
        if let Some(leader) = self.leader.take() {
            leaders().remove(&leader.as_raw());
        }
        if let Some(dir) = self.cgroup.take() {
            kill_cgroup(&dir);
        } else {
            kill_marked(&self.marker);
        }
    }
}

impl Drop for RunTree {
    /// An aborted run must not leave processes behind.
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// Makes the child write `0` (itself) to `procs` before it executes the interpreter.
#[allow(unsafe_code, reason = "Command::pre_exec is unsafe; the closure only makes async-signal-safe calls")]
fn join_in_child(command: &mut Command, procs: &Path) -> anyhow::Result<()> {
    let path = CString::new(procs.as_os_str().as_bytes())?;
    // SAFETY: the closure runs in the forked child before exec, where only async-signal-safe
    // calls are allowed: it calls open(2), write(2) and close(2) on a path built before the
    // fork, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            use nix::fcntl::{OFlag, open};
            let fd =
                open(path.as_c_str(), OFlag::O_WRONLY | OFlag::O_CLOEXEC, nix::sys::stat::Mode::empty())?;
            nix::unistd::write(&fd, b"0")?;
            Ok(())
        });
    }
    Ok(())
}

/// Kills everything in a run's cgroup, waits until it is empty and removes it.
fn kill_cgroup(dir: &Path) {
    let kill_file = dir.join("cgroup.kill");
    let procs = dir.join("cgroup.procs");
    let deadline = std::time::Instant::now() + EMPTY_WITHIN;
    loop {
        let pids = read_pids(&procs);
        if pids.is_empty() || std::time::Instant::now() > deadline {
            break;
        }
        // cgroup.kill kills atomically, forks in flight included; without it (Linux < 5.14)
        // the loop kills what is listed until nothing is.
        if std::fs::write(&kill_file, "1").is_err() {
            for pid in pids {
                let _ = kill(pid, Signal::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    if let Err(e) = std::fs::remove_dir(dir) {
        tracing::warn!(cgroup = %dir.display(), error = %e, "cannot remove a script run's cgroup");
    }
}

fn read_pids(procs: &Path) -> Vec<Pid> {
    std::fs::read_to_string(procs)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok().map(Pid::from_raw))
        .collect()
}

/// Kills every process whose environment carries `marker`, and reaps those re-parented to this
/// process (the subreaper) — repeatedly, as a killed parent's children are re-parented too.
fn kill_marked(marker: &str) {
    let needle = format!("{RUN_MARKER_ENV}={marker}");
    let me = std::process::id();
    for _ in 0..20 {
        let marked = processes().filter(|p| p.environ_has(&needle)).collect::<Vec<_>>();
        for process in &marked {
            let _ = kill(process.pid, Signal::SIGKILL);
        }
        reap_orphans(me);
        if marked.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reaps this process's zombie children that no one waits for: descendants of script runs
/// re-parented here. Script interpreters themselves are reaped by their runs first.
fn reap_orphans(me: u32) {
    // Held while looking and reaping: a script being spawned is a leader before it can be seen.
    let leaders = leaders();
    for process in
        processes().filter(|p| p.ppid == Some(me) && p.zombie && !leaders.contains(&p.pid.as_raw()))
    {
        let _ = waitpid(process.pid, Some(WaitPidFlag::WNOHANG));
    }
}

struct Process {
    pid: Pid,
    ppid: Option<u32>,
    zombie: bool,
}

impl Process {
    fn environ_has(&self, needle: &str) -> bool {
        std::fs::read(format!("/proc/{}/environ", self.pid))
            .is_ok_and(|env| env.split(|b| *b == 0).any(|entry| entry == needle.as_bytes()))
    }
}

/// Every process in `/proc`, with its parent and whether it is a zombie.
fn processes() -> impl Iterator<Item = Process> {
    std::fs::read_dir("/proc").into_iter().flatten().flatten().filter_map(|entry| {
        let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut fields = rest.split(' ');
        let state = fields.next()?;
        let ppid = fields.next()?.parse().ok();
        Some(Process { pid: Pid::from_raw(pid), ppid, zombie: state == "Z" })
    })
}

fn leaders() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    // Each critical section leaves the set whole (a spawn and its insert, a removal, a reaper's
    // look), so a poisoned lock still holds a consistent set.
    LEADERS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn nanos() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state_of(pid: u32) -> Option<char> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(')')?.1.trim_start().chars().next()
    }

    /// A script that has exited but that its run has not waited for yet is a zombie child of
    /// the executor like any orphan; the reaper leaves it to its run, and takes the orphan.
    #[tokio::test]
    async fn the_reaper_leaves_a_spawned_script_to_its_run_and_reaps_an_orphan() {
        let mut tree = RunTree { cgroup: None, marker: "test".into(), leader: None };
        let mut script = Command::new("true");
        let mut child = tree.spawn(&mut script).expect("spawned");
        let script_pid = child.id().expect("pid");
        #[expect(clippy::zombie_processes, reason = "the reaper under test is what waits for it")]
        let orphan = std::process::Command::new("true").spawn().expect("spawned");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while [script_pid, orphan.id()].iter().any(|pid| state_of(*pid) != Some('Z')) {
            assert!(std::time::Instant::now() < deadline, "both exit at once");
            std::thread::sleep(Duration::from_millis(5));
        }
        reap_orphans(std::process::id());
        assert_eq!(state_of(orphan.id()), None, "the orphan is reaped");
        assert_eq!(state_of(script_pid), Some('Z'), "the script is left to its run");
        assert!(child.wait().await.expect("its run waits for it").success());
        tree.kill_all();
        assert!(!leaders().contains(&i32::try_from(script_pid).expect("pid")), "no longer a leader");
    }
}

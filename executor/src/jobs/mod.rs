//! Job threads: one serial queue per job id, with upstream's `/run`, `/kill` and `/idleBeat`
//! semantics (upstream `ExecutorBizImpl` + `XxlJobExecutor.jobThreadRepository`).
//!
//! Architecture invariant: every change to the job map — creating, replacing, reaping or
//! killing a thread — and every push into a thread's queue happens under the one map lock, so a
//! trigger can never land in a queue whose worker has already decided to exit.

mod slots;
mod worker;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use jobwheel_protocol::{BlockStrategy, GlueType, HandleCode, TriggerParam};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::callback::Callbacks;
use crate::fire_journal::{Admission, FireJournal};
use crate::glue::{GlueFactory, HandlerKey};
use crate::handler::JobHandler;
use crate::joblog::LogDir;
pub(crate) use slots::RunSlots;

/// Reason given to a job thread stopped by `/kill` (upstream text).
pub(crate) const KILL_REASON: &str = "scheduling center kill job.";
/// Reason given to job threads still running when the grace period of a shutdown ends.
pub(crate) const SHUTDOWN_REASON: &str = "web container destroy and kill the job.";
/// Why a trigger is refused once a shutdown began: a dial-out executor keeps its sockets (and
/// so its `/run`) open while its runs finish, and a run taken then would die with the process.
pub(crate) const CLOSING_REASON: &str =
    "executor is shutting down: it takes no new runs (its running ones finish); trigger another executor";
const IDLE_REASON: &str = "excutor idle times over limit.";
const COVER_EARLY_REASON: &str = "block strategy effect：Cover Early";
/// The result of an exactly-once fire that an earlier process of this executor took and died
/// running: it is not run again.
const INTERRUPTED_REASON: &str =
    "the executor restarted while it ran this fire; not run again (exactly-once delivery)";

/// The fire key of a trigger to be run at most once per key, `None` for any other.
fn exactly_once_key(param: &TriggerParam) -> Option<&str> {
    (param.delivery_mode.as_deref() == Some(jobwheel_protocol::EXACTLY_ONCE))
        .then_some(param.fire_key.as_deref())
        .flatten()
}

/// Settings the worker tasks need.
#[derive(Debug, Clone)]
pub(crate) struct WorkerSettings {
    pub(crate) logs: LogDir,
    pub(crate) callbacks: Callbacks,
    /// A job thread with nothing to do for this long ends (upstream: > 30 polls of 3 s).
    pub(crate) idle_timeout: Duration,
    /// How long a stopped handler may take to wind down before it is aborted.
    pub(crate) stop_grace: Duration,
    pub(crate) max_log_bytes: u64,
    pub(crate) max_queue: usize,
    /// Where runs are counted (`/metrics`).
    pub(crate) metrics: Arc<crate::metrics::ExecutorMetrics>,
    /// The keys of exactly-once fires taken here (`fire_journal.rs`).
    pub(crate) fires: Arc<FireJournal>,
    /// `--max-concurrent-runs`: the slots every run takes; `None` is no cap (upstream).
    pub(crate) slots: Option<Arc<RunSlots>>,
}

/// The executor's job threads, keyed by job id.
pub(crate) struct JobThreads {
    map: Mutex<HashMap<i32, JobThread>>,
    glue: GlueFactory,
    settings: WorkerSettings,
    tasks: TaskTracker,
    generations: AtomicU64,
    /// Set (under the map lock) when a shutdown begins; `/run` is refused from then on.
    closing: AtomicBool,
}

/// The map's view of one running job thread.
struct JobThread {
    key: HandlerKey,
    generation: u64,
    shared: Arc<Shared>,
    tx: mpsc::Sender<TriggerParam>,
}

/// State shared between a job thread's worker task and the request handlers.
struct Shared {
    job_id: i32,
    /// True while a trigger is executing (set before its log id leaves `queued`).
    running: AtomicBool,
    /// Log ids waiting in the queue: upstream's `triggerLogIdSet`, used for de-duplication and
    /// for "has queue" checks. Pushes insert while holding this lock; the worker removes.
    queued: Mutex<HashSet<i64>>,
    stop: CancellationToken,
    stop_reason: OnceLock<String>,
}

impl Shared {
    fn is_busy(&self) -> bool {
        self.running.load(Ordering::SeqCst) || !lock(&self.queued).is_empty()
    }

    fn stop(&self, reason: &str) {
        let _ = self.stop_reason.set(reason.to_owned());
        self.stop.cancel();
    }

    fn stop_reason(&self) -> &str {
        self.stop_reason.get().map_or("job thread stopped.", String::as_str)
    }
}

impl JobThreads {
    pub(crate) fn new(glue: GlueFactory, settings: WorkerSettings) -> Arc<Self> {
        Arc::new(Self {
            map: Mutex::new(HashMap::new()),
            glue,
            settings,
            tasks: TaskTracker::new(),
            generations: AtomicU64::new(0),
            closing: AtomicBool::new(false),
        })
    }

    /// `/run`: accepts `param` into its job's queue, or says why not (upstream message).
    /// `/wasmPrepare`: compile an announced module ahead of its first trigger.
    pub(crate) fn prepare_wasm(&self, module: jobwheel_protocol::WasmModuleRef) -> Result<(), String> {
        self.glue.prepare_wasm(module)
    }

    /// Replays a recorded Wasm run; refused while the executor shuts down.
    pub(crate) async fn replay(
        &self,
        request: jobwheel_protocol::ReplayRequest,
    ) -> Result<jobwheel_protocol::ReplayReply, String> {
        if self.is_closing() {
            return Err(CLOSING_REASON.to_owned());
        }
        self.glue.replay(request).await
    }

    pub(crate) fn run(self: &Arc<Self>, param: TriggerParam) -> Result<(), String> {
        // Before the fire journal: a refused exactly-once fire is not recorded as taken.
        if self.is_closing() {
            return Err(CLOSING_REASON.to_owned());
        }
        let Some(key) = exactly_once_key(&param).map(str::to_owned) else { return self.run_admitted(param) };
        let now_ms = crate::fire_journal::now_ms();
        let admission = self
            .settings
            .fires
            .admit(&key, param.log_id, now_ms)
            .map_err(|e| format!("cannot write the fire journal: {e}"))?;
        let (code, msg) = match admission {
            Admission::First => {
                let accepted = self.run_admitted(param);
                if let Err(msg) = &accepted {
                    // Refused: a repeat gets the same answer, and nothing ran.
                    self.settings.fires.ended(&key, HandleCode::Fail.code(), msg);
                }
                return accepted;
            }
            // Queued or running here: its callback is on its way.
            Admission::Running { .. } => return Ok(()),
            Admission::Ended { code, msg, .. } => (code, msg),
            Admission::Interrupted { .. } => (HandleCode::Fail.code(), INTERRUPTED_REASON.to_owned()),
        };
        // The first run's result again, for the log id this request carries (the same one
        // when an admin resends a fire); the admin keeps the first result it stored.
        tracing::info!(key, log_id = param.log_id, code, "exactly-once fire sent again; not run again");
        self.settings.callbacks.accepted(param.log_id);
        let result = jobwheel_protocol::HandleCallbackParam {
            log_id: param.log_id,
            log_date_tim: param.log_date_time,
            handle_code: code,
            handle_msg: msg,
            output: None,
            flight: None,
        };
        self.settings.callbacks.push(result, false);
        Ok(())
    }

    /// `/run` for a trigger past the fire journal: upstream's queueing and block strategies.
    fn run_admitted(self: &Arc<Self>, param: TriggerParam) -> Result<(), String> {
        let glue_type: GlueType =
            param.glue_type.parse().map_err(|_| format!("glueType[{}] is not valid.", param.glue_type))?;
        let key = self.glue.key_for(glue_type, &param)?;
        let job_id = param.job_id;

        let mut map = lock(&self.map);
        // Checked again under the lock: a shutdown that began since may have drained the map.
        if self.is_closing() {
            return Err(CLOSING_REASON.to_owned());
        }
        let mut replace_reason = None;
        match map.get(&job_id) {
            Some(thread) if thread.key == key => {
                let busy = thread.shared.is_busy();
                match BlockStrategy::from_wire(&param.executor_block_strategy) {
                    BlockStrategy::DiscardLater if busy => {
                        return Err(format!(
                            "block strategy effect：{}",
                            BlockStrategy::DiscardLater.title()
                        ));
                    }
                    BlockStrategy::CoverEarly if busy => replace_reason = Some(COVER_EARLY_REASON),
                    _ => {}
                }
            }
            Some(_) if glue_type == GlueType::Bean => {
                replace_reason = Some("change jobhandler or glue type, and terminate the old job thread.");
            }
            Some(_) => {
                replace_reason = Some("change job source or glue type, and terminate the old job thread.")
            }
            None => {}
        }
        if replace_reason.is_some() || !map.contains_key(&job_id) {
            // Build before touching the map so a missing handler leaves the old thread alone.
            let handler = self.glue.build(&key, &param)?;
            let thread = self.start_thread(job_id, key, handler);
            if let Some(old) = map.insert(job_id, thread) {
                old.shared.stop(replace_reason.unwrap_or(COVER_EARLY_REASON));
            }
        }
        let Some(thread) = map.get(&job_id) else {
            return Err("internal error: job thread vanished".to_owned());
        };
        // Owed before it is queued, so its result cannot be settled before it is owed.
        let log_id = param.log_id;
        let fresh = self.settings.callbacks.accepted(log_id);
        let pushed = push(thread, param, self.settings.max_queue);
        if pushed.is_err() && fresh {
            self.settings.callbacks.refused(log_id);
        }
        pushed
    }

    /// `/outstanding`: those of `asked` whose results this process still owes an admin.
    pub(crate) fn owed_among(&self, asked: &[i64]) -> Vec<i64> {
        self.settings.callbacks.owed_among(asked)
    }

    /// `/kill`: stops the job's thread, failing its running and queued triggers.
    /// Returns false when there was no thread.
    pub(crate) fn kill(&self, job_id: i32) -> bool {
        let removed = lock(&self.map).remove(&job_id);
        match removed {
            Some(thread) => {
                thread.shared.stop(KILL_REASON);
                true
            }
            None => false,
        }
    }

    /// `/idleBeat`: true when the job has a thread that is running or has queued triggers.
    /// `(job id, triggers waiting)` of every job thread (`/metrics`).
    pub(crate) fn queue_depths(&self) -> Vec<(i32, usize)> {
        let map = lock(&self.map);
        map.iter().map(|(job_id, thread)| (*job_id, lock(&thread.shared.queued).len())).collect()
    }

    pub(crate) fn is_busy(&self, job_id: i32) -> bool {
        lock(&self.map).get(&job_id).is_some_and(|t| t.shared.is_busy())
    }

    /// `(running, waiting, cap)` of the run slots, `None` without `--max-concurrent-runs`.
    pub(crate) fn slot_levels(&self) -> Option<(usize, usize, usize)> {
        self.settings.slots.as_ref().map(|s| s.levels())
    }

    /// What `/status` answers: running job threads, queued triggers, the run slots.
    pub(crate) fn status(&self) -> jobwheel_protocol::ExecutorStatus {
        let (running, queued) = {
            let map = lock(&self.map);
            let running = map.values().filter(|t| t.shared.running.load(Ordering::SeqCst)).count();
            (running, map.values().map(|t| lock(&t.shared.queued).len()).sum())
        };
        let slots = self.slot_levels();
        jobwheel_protocol::ExecutorStatus {
            running,
            queued,
            cap: slots.map(|(_, _, cap)| cap),
            waiting_for_slot: slots.map_or(0, |(_, waiting, _)| waiting),
            glue_enabled: self.glue.glue_enabled(),
        }
    }

    /// Whether every run slot is taken (`/idleBeat` then answers busy for any job).
    pub(crate) fn slots_full(&self) -> bool {
        self.settings.slots.as_ref().is_some_and(|s| s.is_full())
    }

    /// Graceful stop: refuses new triggers from now on, lets running and queued ones finish for
    /// up to `grace`, then stops every thread with upstream's shutdown reason and waits for the
    /// workers to report.
    pub(crate) async fn shutdown(&self, grace: Duration) {
        {
            let _map = lock(&self.map);
            self.closing.store(true, Ordering::SeqCst);
        }
        let deadline = tokio::time::Instant::now() + grace;
        while tokio::time::Instant::now() < deadline && self.any_busy() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let threads: Vec<JobThread> = lock(&self.map).drain().map(|(_, t)| t).collect();
        for thread in &threads {
            thread.shared.stop(SHUTDOWN_REASON);
        }
        self.tasks.close();
        self.tasks.wait().await;
    }

    /// Whether a shutdown began (`/beat` and `/idleBeat` then fail, so routes move on).
    pub(crate) fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    fn any_busy(&self) -> bool {
        lock(&self.map).values().any(|t| t.shared.is_busy())
    }

    fn start_thread(
        self: &Arc<Self>,
        job_id: i32,
        key: HandlerKey,
        handler: Arc<dyn JobHandler>,
    ) -> JobThread {
        let (tx, rx) = mpsc::channel(self.settings.max_queue.max(1));
        let shared = Arc::new(Shared {
            job_id,
            running: AtomicBool::new(false),
            queued: Mutex::new(HashSet::new()),
            stop: CancellationToken::new(),
            stop_reason: OnceLock::new(),
        });
        let generation = self.generations.fetch_add(1, Ordering::Relaxed);
        let worker = worker::Worker {
            threads: Arc::clone(self),
            shared: Arc::clone(&shared),
            handler,
            generation,
            rx,
        };
        self.tasks.spawn(worker.run());
        JobThread { key, generation, shared, tx }
    }

    /// Removes the thread `generation` of `job_id` if it is still current and has nothing queued.
    /// Called by an idle worker; `queue_empty` is evaluated under the map lock.
    fn reap_if_idle(&self, job_id: i32, generation: u64, queue_empty: impl FnOnce() -> bool) -> bool {
        let mut map = lock(&self.map);
        let current = map.get(&job_id).is_some_and(|t| t.generation == generation);
        if !current || !queue_empty() {
            return false;
        }
        if let Some(thread) = map.remove(&job_id) {
            thread.shared.stop(IDLE_REASON);
        }
        true
    }
}

fn push(thread: &JobThread, param: TriggerParam, max_queue: usize) -> Result<(), String> {
    let log_id = param.log_id;
    let mut queued = lock(&thread.shared.queued);
    if queued.contains(&log_id) {
        return Err(format!("repeat trigger job, logId:{log_id}"));
    }
    match thread.tx.try_send(param) {
        Ok(()) => {
            queued.insert(log_id);
            Ok(())
        }
        Err(mpsc::error::TrySendError::Full(_)) => Err(format!(
            "job queue is full: {max_queue} triggers of job {} are already waiting; trigger rejected",
            thread.shared.job_id
        )),
        Err(mpsc::error::TrySendError::Closed(_)) => {
            Err(format!("job thread of job {} has stopped; trigger again", thread.shared.job_id))
        }
    }
}

/// Locks a mutex, recovering from poisoning: the protected data stays consistent because every
/// critical section here is a handful of non-panicking map/set operations.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

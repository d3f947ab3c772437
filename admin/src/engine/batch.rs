//! Group commit for the trigger path's hot store calls: concurrent callers of one operation
//! (read the job epoch, load a job, consume a claim and insert its log row, write a trigger's outcome) are served by
//! one batched statement instead of one round trip each.
//!
//! Why: every store call is a round trip to the database (for SQLite, two thread hand-offs to
//! sqlx's connection worker), and at thousands of triggers a second those round trips, not the
//! SQL, were the admin's cost (docs/benchmarks.md). Batches form by themselves: while one batch
//! is being written, new callers queue; the next caller to get the flush lock writes everything
//! queued so far. A lone caller waits for nothing, so latency at low load is unchanged, and
//! every caller still returns only after its own write is done — the trigger path's ordering
//! and durability are those of the unbatched calls.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

use super::sending::SendGauge;
use crate::store::{
    ClaimId, GroupId, GroupRow, JobId, JobRow, LogId, LogTriggerUpdate, NewLog, Store, StoreError,
};

type Reply<T> = oneshot::Sender<Result<T, Arc<StoreError>>>;

/// Coalesces concurrent `Req → Resp` calls into batches of at most `max_batch`.
pub(crate) struct Coalescer<Req, Resp> {
    queue: Mutex<Vec<(Req, Reply<Resp>)>>,
    /// Held while a batch is written; FIFO, so waiting callers take turns in arrival order.
    flush: tokio::sync::Mutex<()>,
    max_batch: usize,
}

impl<Req, Resp> Coalescer<Req, Resp> {
    pub(crate) fn new(max_batch: usize) -> Self {
        Self {
            queue: Mutex::new(Vec::new()),
            flush: tokio::sync::Mutex::new(()),
            max_batch: max_batch.max(1),
        }
    }

    /// Runs `request` as part of a batch: `run` gets the batch's requests and must answer one
    /// response per request, in order. With `after`, the batch is formed only once no trigger
    /// is on its way to `/run` (or the given bound has passed): a deferred write (`sending.rs`).
    pub(crate) async fn call<F, Fut>(
        &self,
        request: Req,
        after: Option<(&SendGauge, Duration)>,
        run: F,
    ) -> Result<Resp, StoreError>
    where
        F: Fn(Vec<Req>) -> Fut,
        Fut: Future<Output = Result<Vec<Resp>, StoreError>>,
    {
        let (reply, mut answer) = oneshot::channel();
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).push((request, reply));
        loop {
            let _flushing = self.flush.lock().await;
            // A caller ahead of us may have written our request with its batch.
            match answer.try_recv() {
                Ok(result) => return result.map_err(StoreError::Batched),
                Err(oneshot::error::TryRecvError::Closed) => return Err(StoreError::BatchAbandoned),
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            // Waiting under the flush lock lets the callers behind it queue up meanwhile.
            if let Some((gauge, max_defer)) = after {
                gauge.wait_quiet(max_defer).await;
            }
            // Everything queued, `max_batch` a call: one deferral serves the whole queue, so
            // deferred writes keep pace with a stream of sends that never lets the gauge reach
            // zero (one batch per deferral capped them at `max_batch` per `max_defer`).
            let mut queued: Vec<(Req, Reply<Resp>)> =
                std::mem::take(&mut *self.queue.lock().unwrap_or_else(PoisonError::into_inner));
            while !queued.is_empty() {
                let rest = queued.split_off(queued.len().min(self.max_batch));
                let batch = std::mem::replace(&mut queued, rest);
                write(batch, &run).await;
            }
            // Our request was queued before the drain, so it has its answer now; the loop
            // reads it under the lock.
        }
    }
}

/// Runs one batch and answers each of its callers.
async fn write<Req, Resp, F, Fut>(batch: Vec<(Req, Reply<Resp>)>, run: &F)
where
    F: Fn(Vec<Req>) -> Fut,
    Fut: Future<Output = Result<Vec<Resp>, StoreError>>,
{
    let (requests, replies): (Vec<Req>, Vec<Reply<Resp>>) = batch.into_iter().unzip();
    let expected = requests.len();
    match run(requests).await {
        Ok(responses) if responses.len() == expected => {
            for (reply, response) in replies.into_iter().zip(responses) {
                let _ = reply.send(Ok(response));
            }
        }
        Ok(responses) => {
            let error = Arc::new(StoreError::Batched(Arc::new(StoreError::BatchAbandoned)));
            tracing::error!(
                expected,
                got = responses.len(),
                "a batched store call answered the wrong number of rows"
            );
            for reply in replies {
                let _ = reply.send(Err(Arc::clone(&error)));
            }
        }
        Err(error) => {
            let error = Arc::new(error);
            for reply in replies {
                let _ = reply.send(Err(Arc::clone(&error)));
            }
        }
    }
}

/// Largest batch: bounded so one statement stays well under every backend's bind-parameter limit.
const MAX_BATCH: usize = 256;

/// The coalesced calls of the trigger path, over its store.
pub(crate) struct Batches {
    store: Arc<dyn Store>,
    /// The trigger path's sends: deferred outcome writes wait for them (`sending.rs`).
    sends: Arc<SendGauge>,
    max_defer: Duration,
    jobs: Coalescer<JobId, Option<JobRow>>,
    groups: Coalescer<GroupId, Option<GroupRow>>,
    epochs: Coalescer<(), i64>,
    claimed_logs: Coalescer<(ClaimId, NewLog), Option<LogId>>,
    taken_claims: Coalescer<(ClaimId, i64), bool>,
    trigger_updates: Coalescer<LogTriggerUpdate, bool>,
}

impl Batches {
    pub(crate) fn new(store: Arc<dyn Store>, sends: Arc<SendGauge>, max_defer: Duration) -> Self {
        Self {
            store,
            sends,
            max_defer,
            jobs: Coalescer::new(MAX_BATCH),
            groups: Coalescer::new(MAX_BATCH),
            epochs: Coalescer::new(MAX_BATCH),
            claimed_logs: Coalescer::new(MAX_BATCH),
            taken_claims: Coalescer::new(MAX_BATCH),
            trigger_updates: Coalescer::new(MAX_BATCH),
        }
    }

    /// [`JobStore::load_job`](crate::store::JobStore::load_job), batched with concurrent calls.
    pub(crate) async fn load_job(&self, id: JobId) -> Result<Option<JobRow>, StoreError> {
        let store = &self.store;
        self.jobs
            .call(id, None, |ids| async move {
                let rows: HashMap<JobId, JobRow> =
                    store.load_jobs(&ids).await?.into_iter().map(|row| (row.id, row)).collect();
                // Cloned, not moved: the same job may be asked for twice in one batch.
                Ok(ids.iter().map(|id| rows.get(id).cloned()).collect())
            })
            .await
    }

    /// [`JobStore::job_epoch`](crate::store::JobStore::job_epoch), batched: one read serves
    /// every concurrent caller.
    pub(crate) async fn job_epoch(&self) -> Result<i64, StoreError> {
        let store = &self.store;
        self.epochs
            .call((), None, |asks| async move {
                let epoch = store.job_epoch().await?;
                Ok(vec![epoch; asks.len()])
            })
            .await
    }

    /// [`GroupStore::load_group`](crate::store::GroupStore::load_group), batched: one read of
    /// the group table (groups are few) serves every concurrent caller.
    pub(crate) async fn load_group(&self, id: GroupId) -> Result<Option<GroupRow>, StoreError> {
        let store = &self.store;
        self.groups
            .call(id, None, |ids| async move {
                let groups: HashMap<GroupId, GroupRow> =
                    store.list_groups().await?.into_iter().map(|g| (g.id, g)).collect();
                Ok(ids.iter().map(|id| groups.get(id).cloned()).collect())
            })
            .await
    }

    /// [`ScheduleStore::consume_claim_and_insert_log`](crate::store::ScheduleStore::consume_claim_and_insert_log), batched.
    pub(crate) async fn consume_claim(
        &self,
        claim: ClaimId,
        log: NewLog,
    ) -> Result<Option<LogId>, StoreError> {
        let store = &self.store;
        self.claimed_logs
            .call(
                (claim, log),
                None,
                |items| async move { store.consume_claims_and_insert_logs(&items).await },
            )
            .await
    }

    /// [`ScheduleStore::take_claims`](crate::store::ScheduleStore::take_claims) for one staged
    /// claim taken at `now_ms`, batched: the only write a pre-staged trigger makes before its
    /// `/run`. A batch records its latest caller's time (they differ by the batch's wait).
    pub(crate) async fn take_claim(&self, claim: ClaimId, now_ms: i64) -> Result<bool, StoreError> {
        let store = &self.store;
        self.taken_claims
            .call((claim, now_ms), None, |items| async move {
                let taken_ms = items.iter().map(|(_, at)| *at).max().unwrap_or(now_ms);
                let claims: Vec<ClaimId> = items.into_iter().map(|(claim, _)| claim).collect();
                store.take_claims(&claims, taken_ms).await
            })
            .await
    }

    /// [`LogStore::update_log_trigger`](crate::store::LogStore::update_log_trigger), batched;
    /// with `defer`, after the sends in progress (`sending.rs`).
    pub(crate) async fn update_log_trigger(
        &self,
        update: LogTriggerUpdate,
        defer: bool,
    ) -> Result<bool, StoreError> {
        let store = &self.store;
        let after = defer.then_some((&*self.sends, self.max_defer));
        self.trigger_updates
            .call(update, after, |updates| async move { store.update_log_triggers(&updates).await })
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queued_calls_share_batches_and_each_gets_its_own_answer() {
        let coalescer = Arc::new(Coalescer::<u32, u32>::new(64));
        let batches = Arc::new(AtomicUsize::new(0));
        // Hold the flush lock until all 500 calls are queued, as a long write would.
        let writing = coalescer.flush.lock().await;
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0..500u32 {
            let (coalescer, batches) = (Arc::clone(&coalescer), Arc::clone(&batches));
            tasks.spawn(async move {
                let got = coalescer
                    .call(n, None, |requests| {
                        let batches = Arc::clone(&batches);
                        async move {
                            batches.fetch_add(1, Ordering::SeqCst);
                            assert!(requests.len() <= 64);
                            Ok(requests.iter().map(|r| r * 2).collect())
                        }
                    })
                    .await
                    .expect("answered");
                assert_eq!(got, n * 2);
            });
        }
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while coalescer.queue.lock().expect("queue").len() < 500 {
            assert!(tokio::time::Instant::now() < deadline, "calls were not queued");
            tokio::task::yield_now().await;
        }
        drop(writing);
        while let Some(done) = tasks.join_next().await {
            done.expect("task");
        }
        assert_eq!(batches.load(Ordering::SeqCst), 8, "500 queued calls in batches of at most 64");
    }

    #[tokio::test(start_paused = true)]
    async fn one_deferral_writes_everything_queued_while_sends_never_stop() {
        let coalescer = Arc::new(Coalescer::<u32, u32>::new(8));
        let gauge = Arc::new(SendGauge::default());
        // A trigger on its way to /run for the whole test: every deferral runs to its bound.
        let _sending = gauge.enter();
        let max_defer = Duration::from_millis(100);
        let batches = Arc::new(AtomicUsize::new(0));
        let writing = coalescer.flush.lock().await;
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0..100u32 {
            let (coalescer, gauge, batches) =
                (Arc::clone(&coalescer), Arc::clone(&gauge), Arc::clone(&batches));
            tasks.spawn(async move {
                let got = coalescer
                    .call(n, Some((&gauge, max_defer)), |requests| {
                        batches.fetch_add(1, Ordering::SeqCst);
                        async move { Ok(requests.iter().map(|r| r + 1).collect()) }
                    })
                    .await
                    .expect("answered");
                assert_eq!(got, n + 1);
            });
        }
        while coalescer.queue.lock().expect("queue").len() < 100 {
            tokio::task::yield_now().await;
        }
        // The clock is paused: time moves only through the deferrals' own timers.
        let start = tokio::time::Instant::now();
        drop(writing);
        while let Some(done) = tasks.join_next().await {
            done.expect("task");
        }
        assert_eq!(batches.load(Ordering::SeqCst), 13, "100 calls, 8 a batch");
        assert_eq!(start.elapsed(), max_defer, "one deferral for the whole queue, not one per batch");
    }

    #[tokio::test]
    async fn a_failed_batch_fails_every_caller_in_it() {
        let coalescer = Coalescer::<u32, u32>::new(8);
        let result = coalescer.call(1, None, |_| async { Err(StoreError::MissingScheduleLock) }).await;
        assert!(
            matches!(result, Err(StoreError::Batched(e)) if matches!(*e, StoreError::MissingScheduleLock))
        );
    }
}

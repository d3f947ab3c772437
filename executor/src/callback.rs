//! Result callbacks to the admin: batched, journaled to disk, sent, and retried until an admin
//! stores them (upstream `TriggerCallbackThread`, which keeps them in memory until sent).
//!
//! Durability: the journal task takes every finished result waiting, writes the batch to a
//! journal file (fsync: one per batch, so under load many results share one) and only then hands
//! it to the sender. The sender deletes the file once an admin answered 200 — which a jobwheel
//! admin does only after storing — or turns it into a spool file for the retry task, which
//! re-sends every retry interval and at once when an admin has just taken a fresh batch. At start,
//! journal files of a killed process are spooled too (`spool.rs`). So a result survives admin
//! outages, database errors and executor SIGKILLs; the admin ignores duplicates (`handle_code >
//! 0` guard), which makes at-least-once delivery exact. What a SIGKILL can still take: results
//! between their run's end and the journal's fsync (the batching window, milliseconds). Such a
//! run looks, from outside, like one killed while running: upstream's `execute end(finish)` line
//! is appended to a job log only after its result is journaled, and the admin's lost-job monitor
//! closes it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use jobwheel_protocol::HandleCallbackParam;
use jobwheel_protocol::admin_api::paths;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::admin_client::AdminClient;
use crate::joblog::LogDir;
use crate::owed::Owed;
use crate::spool;

/// Largest batch sent in one POST (upstream 3.4.1+ sends at most 50; larger batches keep the
/// admin's per-request overhead low at high trigger rates, and admins accept any size).
/// Counted in results, a result with a flight record counting one more per
/// [`FLIGHT_BYTES_PER_RESULT`] bytes of it: records go up to 2 MiB, and a thousand of those
/// would pass the admin's 64 MiB request limit.
const MAX_BATCH: usize = 1000;
/// See [`MAX_BATCH`].
const FLIGHT_BYTES_PER_RESULT: usize = 32 * 1024;

/// What `item` counts for against [`MAX_BATCH`].
fn cost(item: &HandleCallbackParam) -> usize {
    1 + item.flight.as_ref().map_or(0, |record| record.len() / FLIGHT_BYTES_PER_RESULT)
}

/// What `items` count for against [`MAX_BATCH`].
fn batch_cost(items: &[HandleCallbackParam]) -> usize {
    items.iter().map(cost).sum()
}

/// A finished run's result, and whether its job log gets the `execute end(finish)` line.
#[derive(Debug)]
struct Finished {
    result: HandleCallbackParam,
    end_line: bool,
}

/// Producer handle: job threads push finished runs here.
#[derive(Debug, Clone)]
pub(crate) struct Callbacks {
    tx: mpsc::UnboundedSender<Finished>,
    /// Results owed to an admin; `None` without an admin (nothing is ever delivered).
    owed: Option<Owed>,
}

impl Callbacks {
    /// `/run` is accepting the run `log_id`: its result is owed until an admin stores it. Called
    /// before `/run` answers, so an admin never has a run as triggered that is not in the set.
    /// Returns whether it was new (a repeated trigger of a queued run is not).
    pub(crate) fn accepted(&self, log_id: i64) -> bool {
        self.owed.as_ref().is_some_and(|owed| owed.insert(log_id))
    }

    /// `/run` refused the run `log_id` after [`accepted`](Self::accepted) said it was new.
    pub(crate) fn refused(&self, log_id: i64) {
        if let Some(owed) = &self.owed {
            owed.settled([log_id]);
        }
    }

    /// Those of `asked` whose results this process still owes (`/outstanding`).
    pub(crate) fn owed_among(&self, asked: &[i64]) -> Vec<i64> {
        self.owed.as_ref().map_or_else(Vec::new, |owed| owed.among(asked))
    }

    /// Queues a result for the journal. With `end_line`, upstream's closing line is appended to
    /// the run's job log once the result is journaled, so a log that shows the end shows a
    /// result that survives a SIGKILL.
    pub(crate) fn push(&self, result: HandleCallbackParam, end_line: bool) {
        if self.tx.send(Finished { result, end_line }).is_err() {
            tracing::error!("callback queue closed; result dropped (executor is shutting down)");
        }
    }
}

/// Upstream's last job-log line of a run that ended normally.
fn end_line(result: &HandleCallbackParam) -> String {
    let shown = if result.handle_msg.is_empty() { "null" } else { result.handle_msg.as_str() };
    format!(
        "<br>----------- xxl-job job execute end(finish) -----------<br>----------- Result: handleCode={}, handleMsg = {shown}",
        result.handle_code
    )
}

#[derive(Debug, Clone)]
struct Delivery {
    client: AdminClient,
    logs: LogDir,
    owed: Owed,
    /// Spool files may be waiting: set when a batch is spooled, cleared by a retry pass.
    spool_waiting: Arc<AtomicBool>,
    /// Wakes the retry task early: an admin just took a fresh batch while the spool waits.
    /// Without it a result spooled during an outage waits up to the whole retry interval (30 s,
    /// upstream's) after the admin is back — long enough for the lost-job monitor to close a
    /// run whose result is sitting here.
    admin_back: Arc<Notify>,
}

/// A batch on its first trip, with its journal file (`None` if it could not be written).
type Journaled = (Option<PathBuf>, Vec<HandleCallbackParam>);

/// Spools what a killed predecessor left in the journal, then starts the journal, sender and
/// spool-retry tasks. They stop when `stop` is cancelled, after the journal task has written and
/// the sender has delivered (or spooled) everything already finished.
pub(crate) fn spawn(
    tracker: &TaskTracker,
    client: AdminClient,
    logs: LogDir,
    retry_interval: Duration,
    stop: CancellationToken,
) -> Callbacks {
    let recovered = spool::recover_journal(&logs.callback_spool_dir());
    if recovered > 0 {
        tracing::info!(files = recovered, "callbacks journaled before a restart will be sent again");
    }
    // What a predecessor left spooled is owed too: an admin asking after a restart must not
    // close those runs as lost while their results wait here.
    let owed = Owed::default();
    for log_id in spool::spooled_log_ids(&logs.callback_spool_dir()) {
        let _ = owed.insert(log_id);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    let (journaled_tx, journaled_rx) = mpsc::unbounded_channel();
    let configured = client.is_configured();
    let delivery = Delivery {
        client,
        logs,
        owed: owed.clone(),
        spool_waiting: Arc::new(AtomicBool::new(false)),
        admin_back: Arc::new(Notify::new()),
    };
    tracker.spawn(journal_loop(delivery.clone(), rx, journaled_tx, stop.clone()));
    tracker.spawn(send_loop(delivery.clone(), journaled_rx));
    tracker.spawn(retry_loop(delivery, retry_interval, stop));
    Callbacks { tx, owed: configured.then_some(owed) }
}

/// Takes every finished result waiting (up to [`MAX_BATCH`]), writes the batch to the journal
/// and hands it to the sender; on `stop`, does the same with what is left and ends.
async fn journal_loop(
    delivery: Delivery,
    mut rx: mpsc::UnboundedReceiver<Finished>,
    journaled: mpsc::UnboundedSender<Journaled>,
    stop: CancellationToken,
) {
    // A result that did not fit the last batch starts the next one.
    let mut carried: Option<Finished> = None;
    loop {
        let first = match carried.take() {
            Some(first) => first,
            None => tokio::select! {
                biased;
                param = rx.recv() => match param {
                    Some(p) => p,
                    None => break,
                },
                () = stop.cancelled() => break,
            },
        };
        let mut spent = cost(&first.result);
        let mut batch = vec![first];
        while spent < MAX_BATCH {
            match rx.try_recv() {
                Ok(p) if spent + cost(&p.result) > MAX_BATCH => {
                    carried = Some(p);
                    break;
                }
                Ok(p) => {
                    spent += cost(&p.result);
                    batch.push(p);
                }
                Err(_) => break,
            }
        }
        let _ = journaled.send(delivery.journal_and_end(batch).await);
    }
    rx.close();
    let mut rest: Vec<Finished> = carried.into_iter().collect();
    while let Ok(p) = rx.try_recv() {
        rest.push(p);
    }
    while !rest.is_empty() {
        let (mut take, mut spent) = (0, 0);
        while take < rest.len() && (take == 0 || spent + cost(&rest[take].result) <= MAX_BATCH) {
            spent += cost(&rest[take].result);
            take += 1;
        }
        let chunk: Vec<Finished> = rest.drain(..take).collect();
        let _ = journaled.send(delivery.journal_and_end(chunk).await);
    }
}

/// Sends journaled batches, merging those that piled up during the previous POST into one (up
/// to [`MAX_BATCH`] results), as the batches themselves merge results; ends when the journal
/// task has ended.
async fn send_loop(delivery: Delivery, mut journaled: mpsc::UnboundedReceiver<Journaled>) {
    let mut carried: Option<Journaled> = None;
    loop {
        let first = match carried.take() {
            Some(part) => part,
            None => match journaled.recv().await {
                Some(part) => part,
                None => break,
            },
        };
        let mut items = batch_cost(&first.1);
        let mut parts = vec![first];
        while let Ok(next) = journaled.try_recv() {
            let more = batch_cost(&next.1);
            if items + more > MAX_BATCH {
                carried = Some(next);
                break;
            }
            items += more;
            parts.push(next);
        }
        delivery.deliver_or_spool(parts).await;
    }
}

async fn retry_loop(delivery: Delivery, interval: Duration, stop: CancellationToken) {
    loop {
        if delivery.client.is_configured() {
            delivery.retry_spool().await;
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(interval) => {}
            () = delivery.admin_back.notified() => {}
        }
    }
}

impl Delivery {
    /// Journals the results of `finished` and appends the end line to the job logs of the runs
    /// that ended normally, before the batch goes out (so a log read after the admin has the
    /// result shows the end too).
    ///
    /// With files, the journal comes first: the result is on disk as soon as it can be, and a
    /// SIGKILL in between costs at most the end line. Shipped logs (`--job-logs both|admin`)
    /// are written and flushed first instead, so a result on disk — and so delivered, even by
    /// the next process — has every line of its run at an admin or in the spool; that puts the
    /// flush's round trip before the journal (docs/executor.md, "Logs kept by the admin").
    async fn journal_and_end(&self, finished: Vec<Finished>) -> Journaled {
        let ends: Vec<LogLine> = finished
            .iter()
            .filter(|f| f.end_line)
            .map(|f| LogLine {
                log_date_time: f.result.log_date_tim,
                log_id: f.result.log_id,
                text: end_line(&f.result),
                close: false,
            })
            .collect();
        let results = finished.into_iter().map(|f| f.result).collect();
        if self.logs.ships() {
            append_lines(self.logs.clone(), ends).await;
            self.logs.flush().await;
            return self.journal(results).await;
        }
        let journaled = self.journal(results).await;
        if !ends.is_empty() {
            append_lines(self.logs.clone(), ends).await;
        }
        journaled
    }

    /// Writes `batch` to the journal, off the async threads.
    async fn journal(&self, batch: Vec<HandleCallbackParam>) -> Journaled {
        if !self.client.is_configured() {
            return (None, batch);
        }
        let dir = self.logs.callback_spool_dir();
        match tokio::task::spawn_blocking(move || (spool::write_journal(&dir, &batch), batch)).await {
            Ok((Ok(path), batch)) => (Some(path), batch),
            Ok((Err(e), batch)) => {
                tracing::error!(count = batch.len(), error = %e, "cannot journal callbacks; sending them from memory");
                (None, batch)
            }
            Err(e) => {
                tracing::error!(error = %e, "journal task failed; results lost");
                (None, Vec::new())
            }
        }
    }

    /// Sends the results of `parts` in one POST; on success deletes their journal files, on
    /// failure turns them into spool files (writing one for a part that has none).
    async fn deliver_or_spool(&self, parts: Vec<Journaled>) {
        // The results move into one batch; each part keeps its journal file and length.
        let mut batch = Vec::with_capacity(parts.iter().map(|(_, items)| items.len()).sum());
        let parts: Vec<(Option<PathBuf>, usize)> = parts
            .into_iter()
            .map(|(journal, items)| {
                let len = items.len();
                batch.extend(items);
                (journal, len)
            })
            .collect();
        if batch.is_empty() {
            return;
        }
        if !self.client.is_configured() {
            tracing::debug!(count = batch.len(), "no admin configured; callbacks not sent");
            return;
        }
        match self.client.post(paths::CALLBACK, &batch).await {
            Ok(()) => {
                self.owed.settled(batch.iter().map(|item| item.log_id));
                if self.spool_waiting.load(Ordering::Acquire) {
                    self.admin_back.notify_one();
                }
                for journal in parts.iter().filter_map(|(journal, _)| journal.as_ref()) {
                    if let Err(e) = tokio::fs::remove_file(journal).await {
                        tracing::warn!(file = %journal.display(), error = %e, "cannot remove a delivered journal file");
                    }
                }
                self.note_in_logs(batch, "<br>----------- xxl-job job callback finish.".to_owned(), true)
                    .await
            }
            Err(e) => {
                tracing::warn!(count = batch.len(), error = %e, "callback failed; spooling to disk");
                let note = format!("<br>----------- xxl-job job callback fail, callbackResult:{e}");
                let dir = self.logs.callback_spool_dir();
                let waiting = Arc::clone(&self.spool_waiting);
                let result = tokio::task::spawn_blocking(move || {
                    let mut start = 0;
                    for (journal, len) in parts {
                        let spooled = match journal {
                            Some(journal) => spool::journal_to_spool(&journal),
                            None => spool::write_spool(&dir, &batch[start..start + len]),
                        };
                        start += len;
                        waiting.store(true, Ordering::Release);
                        match spooled {
                            Ok(path) => tracing::info!(file = %path.display(), "callbacks spooled"),
                            Err(e) => tracing::error!(error = %e, "cannot spool callbacks; results lost"),
                        }
                    }
                    batch
                })
                .await;
                match result {
                    Ok(batch) => self.note_in_logs(batch, note, false).await,
                    Err(e) => tracing::error!(error = %e, "spool task failed; results lost"),
                }
            }
        }
    }

    /// Re-sends every spool file, merged into POSTs of up to [`MAX_BATCH`] results; deletes the
    /// files of a POST only once an admin accepted it. Merging matters after an outage: every
    /// batch that failed meanwhile is a file, and one POST per file (each stored by the admin
    /// before it answers) drained them so slowly that the lost-job monitor closed runs whose
    /// results were still queued here.
    async fn retry_spool(&self) {
        // Cleared before listing: a batch spooled after the listing sets it again.
        self.spool_waiting.store(false, Ordering::Release);
        let dir = self.logs.callback_spool_dir();
        let files = tokio::task::spawn_blocking(move || spool::list_spool(&dir)).await.unwrap_or_default();
        let mut files = files.into_iter().peekable();
        while files.peek().is_some() {
            let (mut merged, mut taken) = (Vec::new(), Vec::new());
            while let Some(file) = files.peek() {
                let batch = match spool::read_spool(file).await {
                    Ok(b) => b,
                    Err(e) => {
                        tracing::error!(file = %file.display(), error = %e, "unreadable callback spool file; renamed to .corrupt");
                        let _ = tokio::fs::rename(file, file.with_extension("corrupt")).await;
                        files.next();
                        continue;
                    }
                };
                // A file is never split; one larger than a POST goes alone.
                if !merged.is_empty() && batch_cost(&merged) + batch_cost(&batch) > MAX_BATCH {
                    break;
                }
                merged.extend(batch);
                taken.extend(files.next());
            }
            if merged.is_empty() {
                for file in &taken {
                    let _ = tokio::fs::remove_file(file).await;
                }
                continue;
            }
            match self.client.post(paths::CALLBACK, &merged).await {
                Ok(()) => {
                    self.owed.settled(merged.iter().map(|item| item.log_id));
                    for file in &taken {
                        if let Err(e) = tokio::fs::remove_file(file).await {
                            tracing::warn!(file = %file.display(), error = %e, "cannot remove delivered spool file");
                        }
                    }
                    tracing::info!(count = merged.len(), files = taken.len(), "spooled callbacks delivered");
                    self.note_in_logs(
                        merged,
                        "<br>----------- xxl-job job callback finish.".to_owned(),
                        true,
                    )
                    .await;
                }
                Err(e) => {
                    tracing::debug!(error = %e, "admin still unavailable; spool kept");
                    self.spool_waiting.store(true, Ordering::Release);
                    return;
                }
            }
        }
    }

    /// Appends `note` to the job log of every item in `batch`, off the async threads; with
    /// `close` (the result was delivered: nothing more will be written), closes their shipped
    /// logs, so the admin's rolling log ends after the note.
    async fn note_in_logs(&self, batch: Vec<HandleCallbackParam>, note: String, close: bool) {
        let lines = batch
            .iter()
            .map(|item| LogLine {
                log_date_time: item.log_date_tim,
                log_id: item.log_id,
                text: note.clone(),
                close,
            })
            .collect();
        append_lines(self.logs.clone(), lines).await;
    }
}

/// A line appended to a run's log after the run, and whether the log is then closed.
struct LogLine {
    log_date_time: i64,
    log_id: i64,
    text: String,
    close: bool,
}

/// Appends each line to its job log, off the async threads.
async fn append_lines(logs: LogDir, lines: Vec<LogLine>) {
    let _ = tokio::task::spawn_blocking(move || {
        for line in &lines {
            logs.append(line.log_date_time, line.log_id, &line.text);
            if line.close {
                logs.close(line.log_date_time, line.log_id);
            }
        }
    })
    .await;
}

//! The report monitor's kept counts: the last three days' logs counted in five-minute slices of
//! trigger time, kept between the minute's passes, so a pass recounts only the slices that can
//! have changed instead of every log of three days (upstream's `findLogReport` per day, which at
//! 1 000 triggers a second is a range of up to 260 million rows every minute: docs/benchmarks.md,
//! "The report's minute pass").
//!
//! A slice is recounted when:
//! - it is not kept yet (the first pass, a new day, or after logs were deleted: the log epoch,
//!   `0030_log_epoch`, moved — a deletion can touch any slice);
//! - rows were inserted into it: the rows above the highest log id the last pass saw name their
//!   trigger seconds (a short range of the primary key, whatever their trigger times: a
//!   missed fire recorded for an old second, a trigger from another admin or from upstream's);
//! - it had running rows when last counted: a running row is the only kind whose outcome moves
//!   (a callback, a kill, the lost-job monitor), and a staged row is running until its `/run`;
//! - it lies within half a minute of the last pass (a row whose insert committed after a higher
//!   id was read: PostgreSQL and MySQL hand out ids before commit);
//! - its turn came: three slices a pass, round the window (864 slices: each at least every
//!   288 passes, 4 h 48 min) — the safety net for what the rules above do not see (a result for
//!   a row whose trigger had failed, logs deleted outside a jobwheel admin).

use std::collections::{BTreeMap, BTreeSet};

use crate::store::{LogCounts, LogId, Store, StoreError};

/// A slice's length. Every zone's midnight today is a whole number of 15 minutes from UTC's,
/// so a day is a whole number of slices; a day that is not is counted directly.
const SLICE_SECS: i64 = 300;
/// Slices within this of the last pass (before it, or after now) are recounted every pass: an
/// insert's transaction (a batch of staged rows, a trigger's) commits well within it.
const RECENT_SECS: i64 = 30;
/// Slices recounted in turn each pass, whatever else is due.
const TURNS_PER_PASS: usize = 3;

/// The kept slices of the report's window, and what the last pass saw.
#[derive(Debug, Default)]
pub(super) struct Slices {
    /// The log epoch the kept slices were counted at; `None` before the first pass.
    epoch: Option<i64>,
    /// The highest log id when the last pass began.
    top: i64,
    /// When the last pass ran, epoch seconds.
    last_pass_s: i64,
    /// Kept slices' counts by their first second.
    kept: BTreeMap<i64, LogCounts>,
    /// The first second of the next slice whose turn comes.
    turn: i64,
}

impl Slices {
    /// Brings the slices of `[from_s, until_s)` up to date at `now_ms`. A range that is not whole
    /// slices (a zone whose midnight is not on a slice's edge) keeps nothing: `counts` then
    /// answers `None` and the caller counts the day directly.
    pub(super) async fn update(
        &mut self,
        store: &dyn Store,
        from_s: i64,
        until_s: i64,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        if !whole_slices(from_s, until_s) {
            return Ok(());
        }
        // Epoch first, then the top id: a deletion or insert after either is seen next pass.
        let epoch = store.log_epoch().await?;
        let top = store.top_log_id().await?;
        if self.epoch != Some(epoch) {
            self.kept.clear();
        }
        self.kept.retain(|start, _| (from_s..until_s).contains(start));
        let mut due: BTreeSet<i64> = (from_s..until_s)
            .step_by(SLICE_SECS as usize)
            .filter(|start| !self.kept.contains_key(start))
            .collect();
        if self.epoch == Some(epoch) {
            for t in store.trigger_secs_after(LogId(self.top)).await? {
                let start = t.div_euclid(SLICE_SECS) * SLICE_SECS;
                if (from_s..until_s).contains(&start) {
                    due.insert(start);
                }
            }
            let now_s = now_ms.div_euclid(1000);
            let recent = (self.last_pass_s - RECENT_SECS - SLICE_SECS)..=(now_s + RECENT_SECS);
            for (start, counts) in &self.kept {
                if counts.running > 0 || recent.contains(start) {
                    due.insert(*start);
                }
            }
            let turns: Vec<i64> = self
                .kept
                .range(self.turn..)
                .chain(self.kept.iter())
                .map(|(start, _)| *start)
                .take(TURNS_PER_PASS)
                .collect();
            self.turn = turns.last().map_or(from_s, |last| last + SLICE_SECS);
            due.extend(turns);
        }
        for &start in &due {
            let (from, to) = (to_utc(start), to_utc(start + SLICE_SECS - 1));
            let counts = store.log_counts(from, to).await?;
            self.kept.insert(start, counts);
        }
        self.epoch = Some(epoch);
        self.top = top.0;
        self.last_pass_s = now_ms.div_euclid(1000);
        Ok(())
    }

    /// The counts of `[from_s, until_s)` from the kept slices; `None` unless the range is whole
    /// slices that are all kept.
    pub(super) fn counts(&self, from_s: i64, until_s: i64) -> Option<LogCounts> {
        if !whole_slices(from_s, until_s) {
            return None;
        }
        let mut sum = LogCounts::default();
        for start in (from_s..until_s).step_by(SLICE_SECS as usize) {
            let kept = self.kept.get(&start)?;
            sum.total += kept.total;
            sum.running += kept.running;
            sum.success += kept.success;
        }
        Some(sum)
    }
}

/// Whether `[from_s, until_s)` begins and ends on a slice's edge.
fn whole_slices(from_s: i64, until_s: i64) -> bool {
    from_s % SLICE_SECS == 0 && until_s % SLICE_SECS == 0
}

fn to_utc(secs: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp(secs, 0).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(total: i64) -> LogCounts {
        LogCounts { total, running: 0, success: total }
    }

    #[test]
    fn counts_sum_whole_kept_slices_only() {
        let mut slices = Slices::default();
        slices.kept.insert(0, kept(2));
        slices.kept.insert(300, kept(3));
        assert_eq!(slices.counts(0, 600).map(|c| c.total), Some(5));
        assert_eq!(slices.counts(0, 900), None, "a slice not kept");
        assert_eq!(slices.counts(0, 450), None, "not whole slices");
    }
}

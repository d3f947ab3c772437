//! Comparing a replay with its original: the two runs' summaries (outcome, fuel, peak memory,
//! the digest of the guest's lines and of its workflow output), and — when the lines differ —
//! the first guest line that does, read from the original's job log.

use jobwheel_protocol::flight::{RunSummary, is_host_note};
use serde::Serialize;

/// How a replay compares with the original run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// Everything compared is the same.
    pub identical: bool,
    /// What differs, of `outcome`, `fuel`, `peakMemory`, `lines`, `output`.
    pub differs: Vec<&'static str>,
    /// The first guest line that differs, when the lines do and the original's log could be
    /// read.
    pub first_line: Option<LineDifference>,
}

/// The first guest line where a replay and its original part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LineDifference {
    /// Its number among the guest's lines, from 1.
    pub line: usize,
    /// The original's line there (`None`: the original had no more lines).
    pub original: Option<String>,
    /// The replay's (`None`: the replay had no more lines).
    pub replay: Option<String>,
}

impl Comparison {
    /// Compares the summaries; `original_lines` (the guest lines of the original's log, when it
    /// could be read) and `replay_lines` (the replay's first lines) locate a difference of lines.
    pub fn of(
        original: &RunSummary,
        replay: &RunSummary,
        original_lines: Option<&[String]>,
        replay_lines: &[String],
    ) -> Comparison {
        let mut differs = Vec::new();
        if original.outcome != replay.outcome {
            differs.push("outcome");
        }
        if original.fuel != replay.fuel {
            differs.push("fuel");
        }
        if original.peak_memory_bytes != replay.peak_memory_bytes {
            differs.push("peakMemory");
        }
        let lines_differ = (original.lines, &original.lines_sha256) != (replay.lines, &replay.lines_sha256);
        if lines_differ {
            differs.push("lines");
        }
        if original.output_sha256 != replay.output_sha256 {
            differs.push("output");
        }
        let first_line =
            original_lines.filter(|_| lines_differ).and_then(|lines| first_difference(lines, replay_lines));
        Comparison { identical: differs.is_empty(), differs, first_line }
    }
}

/// The first position where `original` and `replay` differ, if they do.
fn first_difference(original: &[String], replay: &[String]) -> Option<LineDifference> {
    let at = (0..original.len().max(replay.len())).find(|&i| original.get(i) != replay.get(i))?;
    Some(LineDifference {
        line: at + 1,
        original: original.get(at).cloned(),
        replay: replay.get(at).cloned(),
    })
}

/// The guest's own lines in a Wasm run's job log: those after the executor's
/// `----------- wasm module sha256:…` line up to the runtime's `[jobwheel] fuel used …` line,
/// without the runtime's other `[jobwheel]` notes.
pub fn guest_lines(log: &str) -> Vec<String> {
    let mut lines = log.lines();
    if !lines.any(|line| line.contains("----------- wasm module sha256:")) {
        return Vec::new();
    }
    lines
        .take_while(|line| !line.starts_with("[jobwheel] fuel used"))
        .filter(|line| !is_host_note(line))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(lines: u32, digest: &str, fuel: u64) -> RunSummary {
        RunSummary {
            outcome: "succeeded".to_owned(),
            fuel,
            peak_memory_bytes: 65536,
            lines,
            lines_sha256: digest.to_owned(),
            output_sha256: None,
        }
    }

    #[test]
    fn the_guest_lines_are_cut_from_the_log_between_the_module_and_the_stats() {
        let log = "2026-12-07 10:00:00 [x]-[1]-[JobThread-1] <br>----------- xxl-job job execute start\n\
                   2026-12-07 10:00:00 [x]-[2]-[JobThread-1] ----------- wasm module sha256:ab (cached) -----------\n\
                   hello\n[jobwheel] http GET http://h/ -> 200\nworld\n\
                   [jobwheel] fuel used 10, peak memory 1.00 MiB, wall time 0.1 ms\n\
                   2026-12-07 10:00:00 [x]-[3]-[JobThread-1] ----------- xxl-job job execute end(finish)\n";
        assert_eq!(guest_lines(log), vec!["hello".to_owned(), "world".to_owned()]);
        assert!(guest_lines("no module line\nhello\n").is_empty());
    }

    #[test]
    fn a_difference_names_what_differs_and_the_first_line() {
        let same = Comparison::of(&summary(2, "aa", 10), &summary(2, "aa", 10), None, &[]);
        assert!(same.identical && same.differs.is_empty() && same.first_line.is_none());
        let original = ["one".to_owned(), "two".to_owned()];
        let replay = ["one".to_owned(), "2".to_owned(), "three".to_owned()];
        let differ = Comparison::of(&summary(2, "aa", 10), &summary(3, "bb", 12), Some(&original), &replay);
        assert!(!differ.identical);
        assert_eq!(differ.differs, vec!["fuel", "lines"]);
        let first = differ.first_line.expect("a first line");
        assert_eq!(
            (first.line, first.original.as_deref(), first.replay.as_deref()),
            (2, Some("two"), Some("2"))
        );
        let shorter = first_difference(&original, &original[..1]);
        assert_eq!(shorter.map(|d| (d.line, d.replay)), Some((2, None)));
    }
}

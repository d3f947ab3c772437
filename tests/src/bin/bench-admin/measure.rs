//! What a benchmark run measures besides the database (`jobwheel_tests::outcomes`): the admin
//! process's CPU time and memory from `/proc`, and percentiles.

use anyhow::Context as _;

/// CPU time and memory of a process at one instant.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProcSample {
    /// User + system CPU time, in clock ticks.
    pub(crate) cpu_ticks: u64,
    pub(crate) rss_kib: u64,
    /// Peak RSS so far.
    pub(crate) peak_rss_kib: u64,
}

pub(crate) fn sample(pid: u32) -> anyhow::Result<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) is parenthesised and may hold spaces: count from its end.
    let after = &stat[stat.rfind(')').context("stat format")? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let cpu_ticks = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib = |key: &str| -> anyhow::Result<u64> {
        let line = status.lines().find(|l| l.starts_with(key)).with_context(|| format!("{key} in status"))?;
        Ok(line.split_whitespace().nth(1).context("value")?.parse()?)
    };
    Ok(ProcSample { cpu_ticks, rss_kib: kib("VmRSS:")?, peak_rss_kib: kib("VmHWM:")? })
}

/// Clock ticks per second of `/proc/*/stat` times: the kernel reports them in USER_HZ, which
/// is 100 on Linux for every mainstream architecture (`getconf CLK_TCK`).
pub(crate) const TICKS_PER_SECOND: u64 = 100;

/// `(p50, p99, max)` of `values` (sorted in place); zeros when empty.
pub(crate) fn percentiles(values: &mut [i64]) -> (i64, i64, i64) {
    if values.is_empty() {
        return (0, 0, 0);
    }
    values.sort_unstable();
    let at = |q: f64| {
        let rank = ((values.len() as f64) * q).ceil() as usize;
        values[rank.clamp(1, values.len()) - 1]
    };
    (at(0.50), at(0.99), values[values.len() - 1])
}

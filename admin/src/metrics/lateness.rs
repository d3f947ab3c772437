//! The lateness report's view of the metrics (the MCP server's lateness tool): the trigger
//! lateness histogram and the missed fire times since start, read back from the same series
//! `/metrics` exposes, so the report and the scrape never disagree.

use prometheus_client::registry::Registry;

use super::AdminMetrics;

/// The trigger lateness and missed fire times since start ([`AdminMetrics::lateness_snapshot`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LatenessSnapshot {
    /// `(upper bound, seconds; cumulative count)`.
    pub(crate) buckets: Vec<(f64, u64)>,
    /// Sum of all latenesses, seconds.
    pub(crate) sum: f64,
    /// Triggers observed.
    pub(crate) count: u64,
    /// Missed fire times by misfire strategy.
    pub(crate) misfires: std::collections::BTreeMap<String, u64>,
}

impl AdminMetrics {
    /// The trigger lateness histogram (`(upper bound s, cumulative count)`, sum, count) and the
    /// missed fire times by misfire strategy, since start (the MCP lateness report). Read through
    /// a registry of their own, so the levels `/metrics` sets are left alone.
    pub(crate) fn lateness_snapshot(&self) -> LatenessSnapshot {
        let mut registry = Registry::default();
        registry.register("lateness", "", self.lateness.clone());
        registry.register("misfires", "", self.misfires.clone());
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        let (mut buckets, mut sum, mut count, mut misfires) =
            (Vec::new(), 0.0, 0, std::collections::BTreeMap::new());
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some((series, value)) = line.rsplit_once(' ') else { continue };
            let quoted = |key: &str| series.split(key).nth(1).and_then(|rest| rest.split('"').next());
            if series.starts_with("lateness_bucket") {
                let le = quoted("le=\"").and_then(|v| v.parse::<f64>().ok()).unwrap_or(f64::INFINITY);
                buckets.push((le, value.parse().unwrap_or(0)));
            } else if series == "lateness_sum" {
                sum = value.parse().unwrap_or(0.0);
            } else if series == "lateness_count" {
                count = value.parse().unwrap_or(0);
            } else if series.starts_with("misfires_total") {
                let strategy = quoted("strategy=\"").unwrap_or_default().to_owned();
                misfires.insert(strategy, value.parse().unwrap_or(0));
            }
        }
        LatenessSnapshot { buckets, sum, count, misfires }
    }
}

#[cfg(test)]
mod tests {
    use super::AdminMetrics;

    #[test]
    fn the_snapshot_reads_the_histogram_and_the_misfires_back() {
        let metrics = AdminMetrics::new();
        metrics.lateness(12);
        metrics.lateness(700);
        metrics.misfire("DO_NOTHING", 3);
        let snapshot = metrics.lateness_snapshot();
        assert_eq!(snapshot.count, 2);
        assert!((snapshot.sum - 0.712).abs() < 1e-9, "{}", snapshot.sum);
        let at = |bound: f64| snapshot.buckets.iter().find(|(le, _)| (*le - bound).abs() < 1e-9).map(|b| b.1);
        assert_eq!(at(0.01), Some(0), "{:?}", snapshot.buckets);
        assert_eq!(at(0.025), Some(1), "{:?}", snapshot.buckets);
        assert_eq!(at(1.0), Some(2), "{:?}", snapshot.buckets);
        assert_eq!(snapshot.buckets.last().map(|b| b.0), Some(f64::INFINITY));
        assert_eq!(snapshot.misfires.get("DO_NOTHING"), Some(&3));
    }
}

//! Parsed cron expressions by their text. The pre-read computes the next fire time of every job
//! it reads, every second, and most jobs share a handful of expressions; parsing each one anew
//! (croner's parse and its bit sets) was about a tenth of the admin's CPU at 1 000 CRON
//! triggers a second (docs/benchmarks.md, issue 34). A parse is a pure function of the text, so
//! remembering it changes no answer; the memo is process-wide because every caller of
//! [`super::Schedule::parse`] (pre-read, FIX_DELAY completion, workflow sweep, the job form)
//! gains from it and none owns the others' expressions.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use super::expression::{CronError, CronExpression};

/// Distinct expressions kept; past it the memo starts over (a million hourly jobs spread over
/// the hour use 3 600). An entry is a few hundred bytes.
const MAX_ENTRIES: usize = 16_384;

type Parsed = Result<Arc<CronExpression>, CronError>;

static PARSED: LazyLock<Mutex<HashMap<String, Parsed>>> = LazyLock::new(Mutex::default);

/// [`CronExpression::parse`], remembered.
pub(super) fn parse(text: &str) -> Parsed {
    if let Some(found) = PARSED.lock().unwrap_or_else(PoisonError::into_inner).get(text) {
        return found.clone();
    }
    // Parsed outside the lock: another thread parsing the same text meanwhile stores an equal value.
    let parsed = CronExpression::parse(text).map(Arc::new);
    let mut memo = PARSED.lock().unwrap_or_else(PoisonError::into_inner);
    if memo.len() >= MAX_ENTRIES {
        memo.clear();
    }
    memo.insert(text.to_owned(), parsed.clone());
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memo_answers_what_a_fresh_parse_answers() {
        for text in ["0/5 * * * * ?", "0 0 12 L-2 * ?", "not a cron", "0 0 25 * * ?"] {
            let fresh = CronExpression::parse(text).map(|e| e.to_string());
            for _ in 0..2 {
                assert_eq!(parse(text).map(|e| e.to_string()), fresh, "{text}");
            }
        }
        let first = parse("0 15 10 ? * MON-FRI").expect("valid");
        let again = parse("0 15 10 ? * MON-FRI").expect("valid");
        assert!(Arc::ptr_eq(&first, &again), "the second parse is the remembered one");
    }
}

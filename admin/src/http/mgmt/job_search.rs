//! The job list's fuzzy search (`GET /api/v1/jobs?q=`): every word of the query must match,
//! fuzzily and ignoring case, somewhere in a job's description, handler or author, and the best
//! matches come first (upstream 3.4.1 made its job and log pickers searchable; its job list only
//! has separate substring filters, which stay).
//!
//! Scoring is `nucleo-matcher`'s (helix's port of fzf's algorithm): consecutive characters,
//! word starts and early matches score higher, so `ngt rep` finds "Nightly report" before
//! "Regenerate paths". The store hands over only id, description, handler and author of the
//! jobs the other filters leave; the page is then loaded by id.

use nucleo_matcher::pattern::{AtomKind, CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

use crate::http::{ApiError, MgmtState};
use crate::store::{JobFilter, JobId, JobRow, Page, Paged};

/// Longest query accepted (a search box, not a document).
pub(crate) const MAX_QUERY_CHARS: usize = 200;

/// One page of the jobs `filter` leaves that match `query`, best first (newest first among
/// equals), and how many match in all.
pub(crate) async fn search(
    state: &MgmtState,
    filter: &JobFilter,
    query: &str,
    page: Page,
) -> Result<Paged<JobRow>, ApiError> {
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::BadRequest(format!("q: at most {MAX_QUERY_CHARS} characters")));
    }
    let keys = state.store.job_search_keys(filter).await?;
    let ranked = rank(
        query,
        keys.iter().map(|k| {
            let text = format!(
                "{} {} {}",
                k.job_desc,
                k.executor_handler.as_deref().unwrap_or_default(),
                k.author.as_deref().unwrap_or_default()
            );
            (k.id, text)
        }),
    );
    let total = ranked.len() as u64;
    let ids: Vec<JobId> = ranked.into_iter().skip(page.offset as usize).take(page.limit as usize).collect();
    let mut rows = state.store.load_jobs(&ids).await?;
    rows.sort_by_key(|row| ids.iter().position(|id| *id == row.id));
    Ok(Paged { rows, total })
}

/// The ids whose text matches every word of `query`, best score first; the input order
/// (newest first) breaks ties.
fn rank(query: &str, candidates: impl Iterator<Item = (JobId, String)>) -> Vec<JobId> {
    let pattern = Pattern::new(query, CaseMatching::Ignore, Normalization::Smart, AtomKind::Fuzzy);
    let mut matcher = Matcher::new(Config::DEFAULT);
    let mut buffer = Vec::new();
    let mut scored: Vec<(u32, usize, JobId)> = candidates
        .enumerate()
        .filter_map(|(order, (id, text))| {
            pattern.score(Utf32Str::new(&text, &mut buffer), &mut matcher).map(|score| (score, order, id))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, _, id)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::rank;
    use crate::store::JobId;

    fn ranked(query: &str, texts: &[&str]) -> Vec<i32> {
        let candidates = texts.iter().enumerate().map(|(i, t)| (JobId(i as i32), (*t).to_owned()));
        rank(query, candidates).into_iter().map(|id| id.0).collect()
    }

    #[test]
    fn every_word_must_match_and_the_closest_match_comes_first() {
        let texts = [
            "Regenerate paths rebuildHandler ops",
            "Nightly report reportJob alice",
            "Hourly sync syncJob bob",
        ];
        assert_eq!(ranked("ngt rep", &texts), [1], "typo-tolerant, both words needed");
        assert_eq!(ranked("REPORT", &texts), [1], "case is ignored");
        assert_eq!(ranked("bob", &texts), [2], "the author is searched");
        assert_eq!(ranked("syncjob", &texts), [2], "the handler is searched");
        assert!(ranked("zzz", &texts).is_empty());
        let order = ranked("port", &["Nightly report reportJob alice", "Port scan scanJob carol"]);
        assert_eq!(order, [1, 0], "a word start beats a match inside a word");
    }
}

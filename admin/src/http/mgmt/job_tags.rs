//! Job tags: the rule a tag follows, the tags a job view carries, and `GET /api/v1/jobs/tags`
//! (every tag in use with its number of jobs, for the job list's filter and the form).
//!
//! Tags are short lower-case words (`etl`, `team:billing`, `nightly`): lower-casing them makes
//! "ETL" and "etl" one tag, as users expect of labels; a job carries at most [`MAX_TAGS`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::ApiQuery;
use super::auth::Principal;
use super::job_view::JobView;
use crate::http::{ApiError, MgmtState};
use crate::store::{GroupId, JobId};

/// Tags a job may carry.
pub(crate) const MAX_TAGS: usize = 16;
/// Characters a tag may have (the column is `varchar(32)`).
pub(crate) const MAX_TAG_CHARS: usize = 32;

/// The tags of a job form, trimmed, lower-cased, without repeats, in the order given; an
/// empty list clears them.
pub(crate) fn normalize(tags: &[String]) -> Result<Vec<String>, ApiError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for raw in tags {
        let tag = raw.trim().to_lowercase();
        if tag.is_empty() {
            continue;
        }
        if tag.chars().count() > MAX_TAG_CHARS {
            return Err(ApiError::BadRequest(format!(
                "tags: {tag:?} is longer than {MAX_TAG_CHARS} characters"
            )));
        }
        if let Some(bad) = tag.chars().find(|c| !(c.is_alphanumeric() || "-_.:/".contains(*c))) {
            return Err(ApiError::BadRequest(format!(
                "tags: {tag:?} contains {bad:?}; use letters, digits and - _ . : / only"
            )));
        }
        if seen.insert(tag.clone()) {
            out.push(tag);
        }
    }
    if out.len() > MAX_TAGS {
        return Err(ApiError::BadRequest(format!("tags: at most {MAX_TAGS} per job")));
    }
    Ok(out)
}

/// Fills in the tags of `views` (one query for all of them).
pub(crate) async fn attach(state: &MgmtState, views: &mut [JobView]) -> Result<(), ApiError> {
    let ids: Vec<JobId> = views.iter().map(|v| JobId(v.id)).collect();
    let mut by_job: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for (job, tag) in state.store.job_tags(&ids).await? {
        by_job.entry(job.0).or_default().push(tag);
    }
    for view in views {
        view.tags = by_job.remove(&view.id).unwrap_or_default();
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TagQuery {
    #[serde(default)]
    job_group: Option<i32>,
}

#[derive(Serialize)]
pub(crate) struct TagCount {
    tag: String,
    jobs: i64,
}

/// `GET /api/v1/jobs/tags?jobGroup=`: the tags in use (in that group; all groups for
/// administrators only, like the job list) with their number of jobs.
pub(crate) async fn list(
    State(state): State<Arc<MgmtState>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<TagQuery>,
) -> Result<Json<Vec<TagCount>>, ApiError> {
    let group: Option<GroupId> = principal.group_scope(query.job_group)?;
    let counts = state.store.tag_counts(group).await?;
    Ok(Json(counts.into_iter().map(|(tag, jobs)| TagCount { tag, jobs }).collect()))
}

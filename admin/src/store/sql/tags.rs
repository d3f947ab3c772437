//! Job tags (`jobwheel_job_tag`) and the keys the fuzzy job search scores.

use async_trait::async_trait;

use super::SqlStore;
use super::jobs::push_job_filter;
use crate::store::db::{QueryBuf, args};
use crate::store::dialect::Sql;
use crate::store::{GroupId, JobFilter, JobId, JobSearchKey, StoreError, TagStore};

/// `IN (…)` lists are cut into chunks of this many ids (SQLite's parameter limit is 32 766).
const CHUNK: usize = 500;

static CLEAR_TAGS: Sql = Sql::new("DELETE FROM jobwheel_job_tag WHERE job_id = ?");
/// Only for an existing job (the `SELECT` yields no row otherwise).
static ADD_TAG: Sql =
    Sql::new("INSERT INTO jobwheel_job_tag (job_id, tag) SELECT id, ? FROM xxl_job_info WHERE id = ?");
static TAG_COUNTS: Sql =
    Sql::new("SELECT tag, I64(COUNT(*)) FROM jobwheel_job_tag GROUP BY tag ORDER BY tag");
static GROUP_TAG_COUNTS: Sql = Sql::new(
    "SELECT t.tag, I64(COUNT(*)) FROM jobwheel_job_tag t JOIN xxl_job_info j ON j.id = t.job_id \
    WHERE j.job_group = ? GROUP BY t.tag ORDER BY t.tag",
);

#[async_trait]
impl TagStore for SqlStore {
    async fn job_tags(&self, jobs: &[JobId]) -> Result<Vec<(JobId, String)>, StoreError> {
        let mut tags = Vec::new();
        for chunk in jobs.chunks(CHUNK) {
            let mut q = QueryBuf::new("SELECT job_id, tag FROM jobwheel_job_tag WHERE job_id IN (");
            q.bind_list(chunk.iter().copied()).push(") ORDER BY job_id, tag");
            tags.extend(self.ex().fetch_all::<(JobId, String)>(&q, q.args()).await?);
        }
        Ok(tags)
    }

    async fn set_job_tags(&self, job: JobId, tags: &[String]) -> Result<(), StoreError> {
        let mut tx = self.db.begin().await?;
        tx.ex().execute(&CLEAR_TAGS, &args![job]).await?;
        for tag in tags {
            tx.ex().execute(&ADD_TAG, &args![tag.as_str(), job]).await?;
        }
        tx.commit().await
    }

    async fn tag_counts(&self, group: Option<GroupId>) -> Result<Vec<(String, i64)>, StoreError> {
        match group {
            Some(group) => self.ex().fetch_all(&GROUP_TAG_COUNTS, &args![group]).await,
            None => self.ex().fetch_all(&TAG_COUNTS, &[]).await,
        }
    }

    async fn job_search_keys(&self, filter: &JobFilter) -> Result<Vec<JobSearchKey>, StoreError> {
        let mut q =
            QueryBuf::new("SELECT id, JOB_NAME AS job_desc, executor_handler, author FROM xxl_job_info");
        push_job_filter(&mut q, filter);
        q.push(" ORDER BY id DESC");
        self.ex().fetch_all(&q, q.args()).await
    }
}

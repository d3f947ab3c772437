//! An existing xxl-job MySQL database is adopted as-is: tables and rows stay, upstream's
//! JVM-local `datetime`s read correctly with `?timezone=`, and migrating twice is harmless.

use anyhow::{Context as _, ensure};
use jobwheel_admin::store::{self, GroupId, JobId};

use crate::store::at;

/// Upstream's seed rows (doc/db/tables_xxl_job.sql 3.4.2), as an upstream admin in
/// Asia/Shanghai (UTC+8) would have left them, plus one running log.
const UPSTREAM_ROWS: &str = "
INSERT INTO xxl_job_group (id, app_name, title, address_type, address_list, update_time)
  VALUES (1, 'xxl-job-executor-sample', '通用执行器Sample', 0, NULL, '2018-11-03 22:21:31');
INSERT INTO xxl_job_info (id, job_group, job_desc, add_time, update_time, author, alarm_email,
  schedule_type, schedule_conf, misfire_strategy, executor_route_strategy, executor_handler,
  executor_param, executor_block_strategy, executor_timeout, executor_fail_retry_count,
  glue_type, glue_source, glue_remark, glue_updatetime, child_jobid)
  VALUES (1, 1, '示例任务01', '2018-11-03 22:21:31', '2018-11-03 22:21:31', 'XXL', '', 'CRON',
  '0 0 0 * * ? *', 'DO_NOTHING', 'FIRST', 'demoJobHandler', '', 'SERIAL_EXECUTION', 0, 0,
  'BEAN', '', 'GLUE代码初始化', '2018-11-03 22:21:31', '');
INSERT INTO xxl_job_user (id, username, password, role, permission)
  VALUES (1, 'admin', '8d969eef6ecad3c29a3a629280e686cf0c3f5d5a86aff3ca12020c923adc6c92', 1, NULL);
INSERT INTO xxl_job_log (job_group, job_id, trigger_time, trigger_code, handle_code)
  VALUES (1, 1, '2024-02-29 08:00:00', 200, 0);
";

/// Adopts the MySQL database at `url` (empty, fresh) as an upstream admin left it.
pub(crate) async fn check_mysql(url: &str) -> anyhow::Result<()> {
    // The database as upstream created it: its DDL (identical to our first migration), its lock
    // row and its data, but no `_sqlx_migrations`.
    let upstream = sqlx::MySqlPool::connect(url).await?;
    sqlx::raw_sql(include_str!("../../../migrations/mysql/0001_upstream_schema.sql"))
        .execute(&upstream)
        .await?;
    sqlx::raw_sql(UPSTREAM_ROWS).execute(&upstream).await?;
    // As xxl-job 2.x kept it: MD5 hex in `password varchar(50)`.
    sqlx::raw_sql(
        "UPDATE xxl_job_user SET password = 'e10adc3949ba59abbe56e057f20f883e' WHERE id = 1; \
         ALTER TABLE xxl_job_user MODIFY COLUMN password varchar(50) NOT NULL",
    )
    .execute(&upstream)
    .await?;

    let sep = if url.contains('?') { '&' } else { '?' };
    let zoned = format!("{url}{sep}timezone=%2B08:00");
    let store = store::connect(&zoned).await?;
    let job = store.load_job(JobId(1)).await?.expect("upstream's job survives");
    ensure!(
        job.job.job_desc == "示例任务01" && job.job.executor_handler.as_deref() == Some("demoJobHandler")
    );
    ensure!(job.job.add_time == Some(at("2018-11-03T14:21:31Z")), "read in UTC+8: {:?}", job.job.add_time);
    ensure!(store.load_group(GroupId(1)).await?.is_some());
    let mut admin = store.find_user("admin").await?.context("the existing user is kept")?;
    // The column is widened, so the argon2 hash of a first login fits.
    admin.user.password = jobwheel_admin::secrets::hash_password("123456")?;
    ensure!(store.update_user(admin.id, &admin.user).await?);
    let kept = store.find_user("admin").await?.context("admin")?.user.password;
    ensure!(kept == admin.user.password, "the hash was cut: {kept}");
    let log = store.page_logs(&Default::default(), store::Page { offset: 0, limit: 1 }).await?;
    ensure!(log.rows[0].trigger_time == Some(at("2024-02-29T00:00:00Z")));
    // Written back through the same zone, a time keeps upstream's local representation.
    ensure!(store.start_job(JobId(1), 0, at("2024-03-01T00:00:00Z")).await?);
    let raw: String = sqlx::query_scalar("SELECT CAST(update_time AS CHAR) FROM xxl_job_info WHERE id = 1")
        .fetch_one(&upstream)
        .await?;
    ensure!(raw == "2024-03-01 08:00:00", "{raw}");

    // The seeded lock row is not duplicated, the schedule lock works, migrating again is a no-op.
    let locks: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM xxl_job_lock").fetch_one(&upstream).await?;
    ensure!(locks == 1);
    store.begin_schedule().await?.commit().await?;
    let again = store::connect(&zoned).await?;
    ensure!(again.load_job(JobId(1)).await?.is_some());
    Ok(())
}

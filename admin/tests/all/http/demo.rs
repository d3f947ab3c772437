//! `--demo-job`: an empty database gets the sample group and GLUE_WASM job; a database with
//! anything in it is left alone.

use jobwheel_admin::demo::DEMO_APP_NAME;
use jobwheel_admin::store::{JobFilter, Page};

use crate::http::{Admin, sqlite_url, test_config};

#[tokio::test]
async fn an_empty_database_gets_the_sample_job_once() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let module = dir.path().join("hello.wasm");
    std::fs::write(&module, wat::parse_str(r#"(module (func (export "_start")))"#)?)?;
    let mut config = test_config(&sqlite_url(dir.path()));
    config.demo_job = Some(module.clone());

    let admin = Admin::start_engine(config.clone()).await?;
    let groups = admin.store.list_groups().await?;
    assert_eq!(groups.iter().map(|g| g.group.app_name.as_str()).collect::<Vec<_>>(), [DEMO_APP_NAME]);
    let jobs = admin.store.page_jobs(&JobFilter::default(), Page { offset: 0, limit: 10 }).await?;
    assert_eq!(jobs.total, 1);
    let job = &jobs.rows[0];
    assert_eq!(job.job.glue_type.as_str(), "GLUE_WASM");
    assert_eq!(admin.store.list_wasm_versions(job.id).await?.len(), 1, "ready to trigger");
    admin.stop().await?;

    // A second start (or any database with data) changes nothing.
    let admin = Admin::start_engine(config).await?;
    assert_eq!(admin.store.page_jobs(&JobFilter::default(), Page { offset: 0, limit: 10 }).await?.total, 1);
    assert_eq!(admin.store.list_groups().await?.len(), 1);
    admin.stop().await
}

#[tokio::test]
async fn a_bad_demo_module_stops_the_start_with_the_reason() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let module = dir.path().join("not.wasm");
    std::fs::write(&module, b"hello")?;
    let mut config = test_config(&sqlite_url(dir.path()));
    config.demo_job = Some(module);
    let Err(error) = Admin::start_engine(config).await else { panic!("started with a bad module") };
    assert!(format!("{error:#}").contains("not a WebAssembly module"), "{error:#}");
    Ok(())
}

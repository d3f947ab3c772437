//! The content-addressed Wasm module store (`jobwheel_wasm_module`) and the per-job version
//! history (`jobwheel_wasm_version`).

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::args;
use crate::store::dialect::Sql;
use crate::store::support::wasm_digest;
use crate::store::{
    CurrentWasmModule, GroupId, HISTORY_KEPT_PER_JOB, JobId, NewWasmVersion, StoreError, WasmModuleRow,
    WasmPut, WasmStore, WasmVersionRow,
};

// A plain insert on every backend: a duplicate digest surfaces as a unique violation, which
// means "already stored". (MySQL has no `ON CONFLICT DO NOTHING`, and `INSERT IGNORE` would
// also turn real errors, such as a too-large packet, into warnings.)
static PUT_MODULE: Sql =
    Sql::new("INSERT INTO jobwheel_wasm_module (digest, bytes, size, created_at_ms) VALUES (?, ?, ?, ?)");
static GET_MODULE: Sql =
    Sql::new("SELECT id, digest, bytes, size, created_at_ms FROM jobwheel_wasm_module WHERE digest = ?");
static CURRENT_MODULE: Sql = Sql::new(
    "SELECT v.digest, m.size FROM jobwheel_wasm_version v \
    JOIN jobwheel_wasm_module m ON m.digest = v.digest WHERE v.job_id = ? AND v.candidate = 0 \
    ORDER BY v.id DESC LIMIT 1",
);
static INSERT_VERSION: Sql = Sql::new(
    "INSERT INTO jobwheel_wasm_version (job_id, digest, uploader, remark, created_at_ms, candidate) \
    VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
);
/// MySQL refuses `LIMIT` directly inside `IN (…)`; a derived table is accepted everywhere.
static TRIM_VERSIONS: Sql = Sql::new(
    "DELETE FROM jobwheel_wasm_version WHERE job_id = ? AND id NOT IN \
    (SELECT id FROM (SELECT id FROM jobwheel_wasm_version WHERE job_id = ? \
    ORDER BY created_at_ms DESC, id DESC LIMIT ?) AS newest)",
);
static MODULE_IN_GROUP: Sql = Sql::new(
    "SELECT I64(COUNT(*)) FROM jobwheel_wasm_version v JOIN xxl_job_info j ON j.id = v.job_id \
    WHERE v.digest = ? AND j.job_group = ?",
);
static MODULE_GROUPS: Sql = Sql::new(
    "SELECT DISTINCT g.id FROM jobwheel_wasm_version v JOIN xxl_job_info j ON j.id = v.job_id \
    JOIN xxl_job_group g ON g.id = j.job_group WHERE v.digest = ? ORDER BY g.id",
);
static MODULE_SIZE: Sql = Sql::new("SELECT size FROM jobwheel_wasm_module WHERE digest = ?");
static LIST_VERSIONS: Sql = Sql::new(
    "SELECT id, job_id, digest, uploader, remark, created_at_ms, candidate \
    FROM jobwheel_wasm_version WHERE job_id = ? ORDER BY id DESC",
);

#[async_trait]
impl WasmStore for SqlStore {
    async fn put_wasm_module(&self, bytes: &[u8], now_ms: i64) -> Result<WasmPut, StoreError> {
        let digest = wasm_digest(bytes);
        let size = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
        match self.ex().execute(&PUT_MODULE, &args![&digest, bytes, size, now_ms]).await {
            Ok(_) => Ok(WasmPut { digest, inserted: true }),
            Err(e) if e.is_duplicate() => Ok(WasmPut { digest, inserted: false }),
            Err(e) => Err(e),
        }
    }

    async fn get_wasm_module(&self, digest: &str) -> Result<Option<WasmModuleRow>, StoreError> {
        self.ex().fetch_optional(&GET_MODULE, &args![digest]).await
    }

    async fn current_wasm_module(&self, job_id: JobId) -> Result<Option<CurrentWasmModule>, StoreError> {
        self.ex().fetch_optional(&CURRENT_MODULE, &args![job_id]).await
    }

    async fn add_wasm_version(&self, version: &NewWasmVersion) -> Result<i64, StoreError> {
        let mut tx = self.db.begin().await?;
        let insert = args![
            version.job_id,
            &version.digest,
            &version.uploader,
            &version.remark,
            version.created_at_ms,
            i16::from(version.candidate)
        ];
        let id = tx.ex().insert_id(&INSERT_VERSION, &insert).await?;
        let trim = args![version.job_id, version.job_id, i64::from(HISTORY_KEPT_PER_JOB)];
        tx.ex().execute(&TRIM_VERSIONS, &trim).await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn wasm_module_in_group(&self, digest: &str, group: GroupId) -> Result<bool, StoreError> {
        let count: Option<i64> = self.ex().fetch_value(&MODULE_IN_GROUP, &args![digest, group]).await?;
        Ok(count.unwrap_or(0) > 0)
    }

    async fn list_wasm_versions(&self, job_id: JobId) -> Result<Vec<WasmVersionRow>, StoreError> {
        self.ex().fetch_all(&LIST_VERSIONS, &args![job_id]).await
    }

    async fn wasm_module_groups(&self, digest: &str) -> Result<Vec<GroupId>, StoreError> {
        self.ex().fetch_column(&MODULE_GROUPS, &args![digest]).await
    }

    async fn wasm_module_size(&self, digest: &str) -> Result<Option<i64>, StoreError> {
        self.ex().fetch_value(&MODULE_SIZE, &args![digest]).await
    }
}

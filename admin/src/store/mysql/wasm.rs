//! MySQL/MariaDB: the content-addressed Wasm module store and per-job version history.

use async_trait::async_trait;

use super::{MySqlStore, inserted_id};
use crate::store::support::wasm_digest;
use crate::store::{
    HISTORY_KEPT_PER_JOB, JobId, NewWasmVersion, StoreError, WasmModuleRow, WasmPut, WasmStore,
    WasmVersionRow,
};

// No `INSERT IGNORE`: it would also turn real errors (a too-large packet) into warnings. A
// duplicate digest surfaces as a unique violation instead, which means "already stored".
const PUT_MODULE: &str = "INSERT INTO jobwheel_wasm_module (digest, bytes, size, created_at_ms) \
    VALUES (?, ?, ?, ?)";
const GET_MODULE: &str = "SELECT id, digest, bytes, size, created_at_ms \
    FROM jobwheel_wasm_module WHERE digest = ?";
const INSERT_VERSION: &str = "INSERT INTO jobwheel_wasm_version \
    (job_id, digest, uploader, remark, created_at_ms) VALUES (?, ?, ?, ?, ?)";
const TRIM_VERSIONS: &str = "DELETE FROM jobwheel_wasm_version WHERE job_id = ? AND id NOT IN \
    (SELECT id FROM (SELECT id FROM jobwheel_wasm_version WHERE job_id = ? \
    ORDER BY created_at_ms DESC, id DESC LIMIT ?) AS newest)";
const LIST_VERSIONS: &str = "SELECT id, job_id, digest, uploader, remark, created_at_ms \
    FROM jobwheel_wasm_version WHERE job_id = ? ORDER BY id DESC";

#[async_trait]
impl WasmStore for MySqlStore {
    async fn put_wasm_module(&self, bytes: &[u8], now_ms: i64) -> Result<WasmPut, StoreError> {
        let digest = wasm_digest(bytes);
        let size = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
        let put = sqlx::query(PUT_MODULE)
            .bind(&digest)
            .bind(bytes)
            .bind(size)
            .bind(now_ms)
            .execute(&self.pool)
            .await;
        match put {
            Ok(_) => Ok(WasmPut { digest, inserted: true }),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                Ok(WasmPut { digest, inserted: false })
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn get_wasm_module(&self, digest: &str) -> Result<Option<WasmModuleRow>, StoreError> {
        Ok(sqlx::query_as(GET_MODULE).bind(digest).fetch_optional(&self.pool).await?)
    }

    async fn add_wasm_version(&self, version: &NewWasmVersion) -> Result<i64, StoreError> {
        let mut tx = self.begin_tx().await?;
        let done = sqlx::query(INSERT_VERSION)
            .bind(version.job_id)
            .bind(&version.digest)
            .bind(&version.uploader)
            .bind(&version.remark)
            .bind(version.created_at_ms)
            .execute(&mut *tx)
            .await?;
        let id = inserted_id(&done)?;
        sqlx::query(TRIM_VERSIONS)
            .bind(version.job_id)
            .bind(version.job_id)
            .bind(i64::from(HISTORY_KEPT_PER_JOB))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(id)
    }

    async fn list_wasm_versions(&self, job_id: JobId) -> Result<Vec<WasmVersionRow>, StoreError> {
        Ok(sqlx::query_as(LIST_VERSIONS).bind(job_id).fetch_all(&self.pool).await?)
    }
}

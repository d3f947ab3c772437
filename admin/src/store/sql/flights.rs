//! `jobwheel_log_flight` (migration 0040): flight records of recorded Wasm runs
//! (`store/flight_store.rs`).

use async_trait::async_trait;

use super::SqlStore;
use crate::store::db::args;
use crate::store::dialect::Sql;
use crate::store::flight_store::{RawFlight, RawFlightOfJob};
use crate::store::{FlightRow, FlightStore, JobId, LogId, StoreError};

static PUT_FLIGHT: Sql = Sql::new(
    "INSERT INTO jobwheel_log_flight (log_id, module, replayable, reason, record_bytes, body) \
    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (log_id) DO UPDATE SET module = excluded.module, \
    replayable = excluded.replayable, reason = excluded.reason, record_bytes = excluded.record_bytes, \
    body = excluded.body",
);
static FLIGHT_OF_LOG: Sql = Sql::new(
    "SELECT log_id, module, replayable, reason, record_bytes, body FROM jobwheel_log_flight WHERE log_id = ?",
);
static FLIGHTS_OF_JOB: Sql = Sql::new(
    "SELECT l.id, I64(COALESCE(EPOCH(l.trigger_time), 0) * 1000) FROM xxl_job_log l \
    JOIN jobwheel_log_flight f ON f.log_id = l.id WHERE l.job_id = ? ORDER BY l.id DESC LIMIT ?",
);

static FLIGHT_PAGE: Sql = Sql::new(
    "SELECT f.log_id, f.module, f.replayable, f.reason, f.record_bytes, f.body, l.job_id \
    FROM jobwheel_log_flight f JOIN xxl_job_log l ON l.id = f.log_id WHERE f.log_id > ? \
    ORDER BY f.log_id LIMIT ?",
);
static REPLACE_BODY: Sql = Sql::new("UPDATE jobwheel_log_flight SET body = ? WHERE log_id = ?");

#[async_trait]
impl FlightStore for SqlStore {
    async fn put_flights(&self, rows: &[FlightRow]) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut tx = self.db.begin().await?;
        for row in rows {
            // A digest that is not hex (a record that could not be read) is kept empty.
            let module = hex::decode(&row.module).unwrap_or_default();
            let args = args![
                row.log_id,
                module.as_slice(),
                i16::from(row.replayable),
                row.reason.as_deref(),
                row.record_bytes,
                row.body.as_slice()
            ];
            tx.ex().execute(&PUT_FLIGHT, &args).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn flight(&self, log: LogId) -> Result<Option<FlightRow>, StoreError> {
        let raw: Option<RawFlight> = self.ex().fetch_optional(&FLIGHT_OF_LOG, &args![log]).await?;
        Ok(raw.map(FlightRow::from))
    }

    async fn job_flights(&self, job: JobId, limit: u32) -> Result<Vec<(LogId, i64)>, StoreError> {
        Ok(self.ex().fetch_all(&FLIGHTS_OF_JOB, &args![job, i64::from(limit)]).await?)
    }

    async fn flight_page(&self, after: LogId, limit: u32) -> Result<Vec<(FlightRow, JobId)>, StoreError> {
        let raw: Vec<RawFlightOfJob> =
            self.ex().fetch_all(&FLIGHT_PAGE, &args![after, i64::from(limit)]).await?;
        Ok(raw.into_iter().map(|r| (FlightRow::from(r.flight), r.job_id)).collect())
    }

    async fn replace_flight_bodies(&self, bodies: &[(LogId, Vec<u8>)]) -> Result<(), StoreError> {
        if bodies.is_empty() {
            return Ok(());
        }
        let mut tx = self.db.begin().await?;
        for (log_id, body) in bodies {
            tx.ex().execute(&REPLACE_BODY, &args![body.as_slice(), *log_id]).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

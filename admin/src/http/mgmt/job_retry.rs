//! A job's retry backoff as the job form, the job read and the export file carry it: four flat
//! fields beside upstream's `executorFailRetryCount` (`retryBackoff` seconds, or null for the
//! admin's `--retry-backoff*`; `retryBackoffStrategy` `FIXED` or `EXPONENTIAL`;
//! `retryBackoffMax` seconds; `retryJitter` percent), and their checks.

use serde::{Deserialize, Serialize};

use crate::http::ApiError;
use crate::store::{BackoffError, BackoffStrategy, RETRY_BACKOFF_MAX_SECS, RetryBackoff};

/// The backoff fields of a job form or read (flattened into it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RetryForm {
    /// Seconds before the first retry; null uses the admin's default (and ignores the rest).
    #[serde(default)]
    pub(crate) retry_backoff: Option<i64>,
    /// `FIXED` (absent) or `EXPONENTIAL`.
    #[serde(default)]
    pub(crate) retry_backoff_strategy: Option<String>,
    /// The longest wait of an exponential backoff, seconds.
    #[serde(default)]
    pub(crate) retry_backoff_max: Option<i64>,
    /// Up to this percentage of each wait is taken off at random.
    #[serde(default)]
    pub(crate) retry_jitter: Option<i64>,
}

fn bad(field: &str, rule: impl std::fmt::Display) -> ApiError {
    ApiError::BadRequest(format!("{field}: {rule}"))
}

impl RetryForm {
    /// The form as stored: `None` for the admin's default, each violation a 400 naming its field.
    pub(crate) fn check(&self) -> Result<Option<RetryBackoff>, ApiError> {
        let Some(base) = self.retry_backoff else { return Ok(None) };
        let strategy = match self.retry_backoff_strategy.as_deref().map(str::trim) {
            None | Some("") => BackoffStrategy::Fixed,
            Some(name) => {
                name.parse().map_err(|()| bad("retryBackoffStrategy", "must be FIXED or EXPONENTIAL"))?
            }
        };
        let range = format!("must be 0 to {RETRY_BACKOFF_MAX_SECS} seconds");
        RetryBackoff::checked(strategy, base, self.retry_backoff_max, self.retry_jitter.unwrap_or(0))
            .map(Some)
            .map_err(|error| match error {
                BackoffError::Base => bad("retryBackoff", range),
                BackoffError::Ceiling => bad("retryBackoffMax", range),
                BackoffError::CeilingBelowBase => {
                    bad("retryBackoffMax", format!("must be at least retryBackoff ({base} s)"))
                }
                BackoffError::Jitter => bad("retryJitter", "must be 0 to 100 (percent)"),
            })
    }

    /// The fields of a stored backoff (all null for the admin's default).
    pub(crate) fn from_stored(backoff: Option<RetryBackoff>) -> Self {
        backoff.map_or_else(Self::default, |b| Self {
            retry_backoff: Some(i64::from(b.base_secs)),
            retry_backoff_strategy: Some(b.strategy.name().to_owned()),
            retry_backoff_max: Some(i64::from(b.max_secs)),
            retry_jitter: Some(i64::from(b.jitter_pct)),
        })
    }
}

//! The alarm fields of the job, group and workflow forms (docs/alarms.md): `alarmChannels`
//! (channel ids; a job's or workflow's own list wins over its group's) and `doneWithin`
//! (seconds a run — or an instance — should be done within; 0: no duration alarm). Absent
//! fields keep what is stored, so clients that do not know them change nothing.

use serde::{Deserialize, Serialize};

use crate::http::{ApiError, MgmtState};
use crate::store::{ChannelId, RouteRow, Store, route_scope};

/// Longest "should be done within": a week.
pub(crate) const DONE_WITHIN_MAX: i64 = 7 * 24 * 3600;
/// Channels one job, group or workflow may choose.
const CHANNELS_MAX: usize = 16;

/// The alarm fields of a form (flattened into it).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AlarmForm {
    #[serde(default)]
    pub(crate) alarm_channels: Option<Vec<i64>>,
    #[serde(default)]
    pub(crate) done_within: Option<i64>,
}

/// The alarm fields of a read (flattened into it).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AlarmView {
    /// The channels chosen here (not the group's it falls back to).
    pub(crate) alarm_channels: Vec<i64>,
    /// Seconds; 0: none.
    pub(crate) done_within: i64,
}

impl AlarmView {
    fn of(route: &RouteRow) -> Self {
        Self {
            alarm_channels: route.channel_ids().into_iter().map(|c| c.0).collect(),
            done_within: i64::from(route.done_within_secs),
        }
    }
}

/// A checked form: what to store (`None`: keep).
#[derive(Debug, Clone, Default)]
pub(crate) struct CheckedAlarm {
    channels: Option<String>,
    done_within: Option<i32>,
}

impl AlarmForm {
    /// Checks the channels exist and the duration is in range; `scope` decides whether a
    /// duration may be given (not on groups).
    pub(crate) async fn check(&self, state: &MgmtState, scope: &str) -> Result<CheckedAlarm, ApiError> {
        let channels = match &self.alarm_channels {
            None => None,
            Some(ids) => {
                let mut seen = Vec::new();
                for &id in ids {
                    if state.store.load_channel(ChannelId(id)).await?.is_none() {
                        return Err(ApiError::BadRequest(format!("alarmChannels: no alarm channel {id}")));
                    }
                    if !seen.contains(&id) {
                        seen.push(id);
                    }
                }
                if seen.len() > CHANNELS_MAX {
                    return Err(ApiError::BadRequest(format!("alarmChannels: at most {CHANNELS_MAX}")));
                }
                Some(seen.iter().map(ToString::to_string).collect::<Vec<_>>().join(","))
            }
        };
        let done_within = match self.done_within {
            None => None,
            Some(_) if scope == route_scope::GROUP => {
                return Err(ApiError::BadRequest(
                    "doneWithin: set it on jobs and workflows, not on groups".to_owned(),
                ));
            }
            Some(secs) if !(0..=DONE_WITHIN_MAX).contains(&secs) => {
                return Err(ApiError::BadRequest(format!(
                    "doneWithin: must be 0 (none) to {DONE_WITHIN_MAX} seconds"
                )));
            }
            Some(secs) => Some(i32::try_from(secs).unwrap_or(0)),
        };
        Ok(CheckedAlarm { channels, done_within })
    }
}

impl CheckedAlarm {
    /// Stores the checked fields on `scope`/`target`, keeping the ones the form left out.
    pub(crate) async fn store(&self, store: &dyn Store, scope: &str, target: i64) -> Result<(), ApiError> {
        if self.channels.is_none() && self.done_within.is_none() {
            return Ok(());
        }
        let current = store.routes(scope, &[target]).await?.pop().unwrap_or_default();
        let route = RouteRow {
            scope: scope.to_owned(),
            target_id: target,
            channels: self.channels.clone().unwrap_or(current.channels),
            done_within_secs: self.done_within.unwrap_or(current.done_within_secs),
        };
        Ok(store.set_route(&route).await?)
    }
}

/// The alarm fields of each of `targets` in `scope`, in their order.
pub(crate) async fn views(
    state: &MgmtState,
    scope: &str,
    targets: &[i64],
) -> Result<Vec<AlarmView>, ApiError> {
    let routes = state.store.routes(scope, targets).await?;
    Ok(targets
        .iter()
        .map(|t| routes.iter().find(|r| r.target_id == *t).map(AlarmView::of).unwrap_or_default())
        .collect())
}

/// Removes the route of a deleted job, group or workflow.
pub(crate) async fn forget(state: &MgmtState, scope: &str, target: i64) -> Result<(), ApiError> {
    let route = RouteRow { scope: scope.to_owned(), target_id: target, ..RouteRow::default() };
    Ok(state.store.set_route(&route).await?)
}

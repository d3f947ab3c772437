//! The calendars of an import (`import.rs`): the file's calendars are matched by name. One this
//! admin lacks is created (by an administrator only, since calendars serve every group); one it
//! has is kept as it is, and the report says when its days differ from the file's, because
//! changing it here would move other jobs' fire times.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Serialize;

use super::auth::Principal;
use super::calendars::{self, CalendarInput};
use super::transfer::CalendarEntry;
use super::{ApiJson, audit};
use crate::calendar::CalendarDays;
use crate::http::{ApiError, MgmtState};
use crate::store::CalendarId;

/// What the import does with one calendar.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CalendarItem {
    name: String,
    /// `create`, `keep` (same days here) or `differs` (kept; its days here differ).
    action: &'static str,
}

/// The file's calendars against this admin's.
pub(crate) struct CalendarPlan {
    /// Calendars here, by name (and, once applied, the created ones).
    ids: HashMap<String, CalendarId>,
    to_create: Vec<CalendarEntry>,
    pub(crate) items: Vec<CalendarItem>,
}

impl CalendarPlan {
    /// Plans the file's calendars; what cannot be imported is added to `problems`.
    pub(crate) async fn new(
        state: &MgmtState,
        principal: &Principal,
        entries: &[CalendarEntry],
        problems: &mut Vec<String>,
    ) -> Result<Self, ApiError> {
        let mut plan = Self { ids: HashMap::new(), to_create: Vec::new(), items: Vec::new() };
        for row in state.store.list_calendars().await? {
            plan.ids.insert(row.calendar.name.clone(), row.id);
        }
        for entry in entries {
            let what = format!("calendar {:?}", entry.name);
            let normalized = match entry.days.normalize() {
                Ok((normalized, _)) => normalized,
                Err(error) => {
                    problems.push(format!("{what}: {error}"));
                    continue;
                }
            };
            let action = match state.store.find_calendar(&entry.name).await? {
                Some(here) => {
                    let same =
                        serde_json::from_str::<CalendarDays>(&here.calendar.days).ok() == Some(normalized);
                    if same { "keep" } else { "differs" }
                }
                None if !principal.is_admin() => {
                    problems.push(format!(
                        "{what}: not on this admin, and only an administrator may create calendars"
                    ));
                    continue;
                }
                None => {
                    plan.to_create.push(entry.clone());
                    "create"
                }
            };
            plan.items.push(CalendarItem { name: entry.name.clone(), action });
        }
        Ok(plan)
    }

    /// Whether every calendar `entry` names is here or in the file; a problem for each that is not.
    pub(crate) fn check_names<'a>(
        &self,
        what: &str,
        names: impl IntoIterator<Item = &'a String>,
        problems: &mut Vec<String>,
    ) -> bool {
        let unknown: Vec<&String> = names
            .into_iter()
            .filter(|name| !self.ids.contains_key(*name) && !self.to_create.iter().any(|c| &c.name == *name))
            .collect();
        for name in &unknown {
            problems.push(format!("{what}: calendar {name:?} is neither in the file nor on this admin"));
        }
        unknown.is_empty()
    }

    /// The ids of `names` known so far (before [`CalendarPlan::apply`], the created ones are
    /// missing: the job check then runs without them).
    pub(crate) fn ids(&self, names: &[String]) -> Vec<i64> {
        names.iter().filter_map(|n| self.ids.get(n)).map(|id| id.0).collect()
    }

    /// Creates the missing calendars through the calendar API's handler, each audited.
    pub(crate) async fn apply(
        &mut self,
        state: &Arc<MgmtState>,
        principal: &Principal,
        client: &str,
    ) -> Result<(), ApiError> {
        for entry in std::mem::take(&mut self.to_create) {
            let input =
                CalendarInput { name: entry.name.clone(), description: entry.description, days: entry.days };
            let (_, Json(view)) =
                calendars::create(State(Arc::clone(state)), principal.clone(), ApiJson(input)).await?;
            let id = CalendarId(view.id);
            let username = principal.user.user.username.clone();
            audit::record_calendar_created(state, client.to_owned(), username, id).await;
            self.ids.insert(entry.name, id);
        }
        Ok(())
    }
}

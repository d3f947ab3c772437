//! A workflow's calendars and exclusion windows, as a job has them (docs/scheduling.md): the
//! calendars it fires only on and never on, by id, and daily windows it never starts in. Stored
//! as a job's are, in side tables ([`DayRefs`] with the workflow row); [`WorkflowDays::rules`] compiles
//! them into the [`DayRules`] the next start time is computed under (reading the calendars
//! from the store: the one part of the workflow model that does).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::calendar::{CalendarDays, DayRules, DaySet, parse_windows};
use crate::store::{CalendarId, DayRefs, Store, StoreError};

/// Calendars one workflow may refer to (both kinds together), as for a job.
pub const MAX_WORKFLOW_CALENDARS: usize = 16;

/// The day rules of a workflow as the API and the row hold them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowDays {
    /// Starts only on days in one of these calendars (none: every day).
    #[serde(default)]
    pub only_on: Vec<i64>,
    /// Never starts on days in one of these calendars.
    #[serde(default)]
    pub never_on: Vec<i64>,
    /// Never starts inside one of these daily windows (`HH:MM-HH:MM`, in the workflow's zone).
    #[serde(default)]
    pub exclusion_windows: Vec<String>,
}

/// Why day rules cannot be used; the text names the field.
#[derive(Debug, thiserror::Error)]
pub enum DaysError {
    /// A field is wrong (a calendar missing, a window unreadable).
    #[error("{0}")]
    Invalid(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl WorkflowDays {
    /// The rules as stored with the workflow row.
    pub fn from_stored(stored: &DayRefs) -> Self {
        let ids = |list: &[CalendarId]| list.iter().map(|c| c.0).collect();
        Self {
            only_on: ids(&stored.only_on),
            never_on: ids(&stored.never_on),
            exclusion_windows: stored
                .windows
                .split(',')
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .map(str::to_owned)
                .collect(),
        }
    }

    /// The form stored with the workflow row.
    pub fn to_stored(&self) -> DayRefs {
        let ids = |list: &[i64]| list.iter().copied().map(CalendarId).collect();
        DayRefs {
            only_on: ids(&self.only_on),
            never_on: ids(&self.never_on),
            windows: self.exclusion_windows.join(","),
        }
    }

    /// Whether there is no rule at all.
    pub fn is_empty(&self) -> bool {
        self.only_on.is_empty() && self.never_on.is_empty() && self.exclusion_windows.is_empty()
    }

    /// Whether `calendar` is one of its calendars.
    pub fn refers_to(&self, calendar: i64) -> bool {
        self.only_on.contains(&calendar) || self.never_on.contains(&calendar)
    }

    /// The same rules checked and tidied for storing: ids sorted without repeats, windows in
    /// their canonical text. Errors name the field at fault.
    pub fn checked(mut self) -> Result<Self, DaysError> {
        for ids in [&mut self.only_on, &mut self.never_on] {
            ids.sort_unstable();
            ids.dedup();
        }
        if self.only_on.len() + self.never_on.len() > MAX_WORKFLOW_CALENDARS {
            return Err(DaysError::Invalid(format!(
                "onlyOn, neverOn: at most {MAX_WORKFLOW_CALENDARS} calendars"
            )));
        }
        if let Some(both) = self.only_on.iter().find(|id| self.never_on.contains(id)) {
            return Err(DaysError::Invalid(format!("neverOn: calendar {both} is also in onlyOn")));
        }
        let windows = parse_windows(&self.exclusion_windows)
            .map_err(|e| DaysError::Invalid(format!("exclusionWindows: {e}")))?;
        self.exclusion_windows = windows.iter().map(ToString::to_string).collect();
        Ok(self)
    }

    /// The rules of a form being saved: a calendar that does not exist is refused, naming
    /// the field.
    pub async fn checked_rules(&self, store: &dyn Store) -> Result<DayRules, DaysError> {
        self.compile(store, true).await
    }

    /// The rules, with each calendar read from `store`. A calendar that is gone (the admin
    /// refuses to delete one in use, so only a hand-edited database has this) is left out with
    /// an error in the log, so one bad reference cannot stop a schedule for good.
    pub async fn rules(&self, store: &dyn Store) -> Result<DayRules, StoreError> {
        self.compile(store, false).await.map_err(|e| match e {
            DaysError::Store(e) => e,
            DaysError::Invalid(_) => unreachable!("only a strict compile refuses"),
        })
    }

    async fn compile(&self, store: &dyn Store, strict: bool) -> Result<DayRules, DaysError> {
        let mut sets: [Vec<Arc<DaySet>>; 2] = [Vec::new(), Vec::new()];
        for (kind, (field, ids)) in
            [("onlyOn", &self.only_on), ("neverOn", &self.never_on)].into_iter().enumerate()
        {
            for &id in ids {
                let Some(row) = store.load_calendar(CalendarId(id)).await? else {
                    if strict {
                        return Err(DaysError::Invalid(format!("{field}: calendar {id} does not exist")));
                    }
                    tracing::error!(
                        calendar_id = id,
                        "a workflow refers to a calendar that is gone; left out"
                    );
                    continue;
                };
                let set = CalendarDays::compile_stored(&row.calendar.days).unwrap_or_else(|error| {
                    tracing::error!(calendar_id = id, %error, "stored calendar unreadable, treated as empty");
                    DaySet::default()
                });
                sets[kind].push(Arc::new(set));
            }
        }
        let windows = parse_windows(&self.exclusion_windows).unwrap_or_default();
        let [only_on, never_on] = sets;
        Ok(DayRules::new(only_on, never_on, windows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_tidies_and_refuses_with_the_field_named() {
        let days = WorkflowDays {
            only_on: vec![3, 1, 3],
            never_on: vec![2],
            exclusion_windows: vec!["23:00-01:00".into()],
        };
        let tidy = days.checked().expect("valid");
        assert_eq!(tidy.only_on, vec![1, 3]);
        assert!(tidy.refers_to(2) && !tidy.refers_to(4));
        assert_eq!(WorkflowDays::from_stored(&tidy.to_stored()), tidy);

        let both = WorkflowDays { only_on: vec![1], never_on: vec![1], ..WorkflowDays::default() };
        assert!(both.checked().unwrap_err().to_string().starts_with("neverOn: calendar 1"));
        let bad = WorkflowDays { exclusion_windows: vec!["25:00-01:00".into()], ..WorkflowDays::default() };
        assert!(bad.checked().unwrap_err().to_string().starts_with("exclusionWindows:"));
        assert!(WorkflowDays::from_stored(&DayRefs::default()).is_empty());
    }
}

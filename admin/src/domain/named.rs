//! [`Named`]: a strategy or type as a job stores it — one of the values this admin knows, or a
//! name it does not (an adopted database, an admin of another version) kept exactly as read.
//!
//! Why not just the enum: upstream's columns are text, and upstream treats a name it does not
//! know as "no such strategy" at the moment it is used (a route "not valid" in the trigger
//! message, DO_NOTHING for a misfire), never as an unreadable row. So a stored job carries
//! `Named<T>`: the engine asks [`Named::known`] and applies upstream's rule for the rest, the job
//! list shows what is stored, and reading a row never changes or loses it. Input is stricter:
//! the form's check refuses an unknown name, so nothing new is stored unknown.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sqlx::error::BoxDynError;
use sqlx::{Database, Decode, Type};

/// A closed set of upstream constant names.
pub trait KnownName: Sized + Copy + PartialEq + 'static {
    /// Every value, in the UI's order.
    fn all() -> &'static [Self];
    /// The constant name, as stored and sent.
    fn name(self) -> &'static str;
    /// The value named `name` exactly (upstream's names are case-sensitive).
    fn from_name(name: &str) -> Option<Self> {
        Self::all().iter().copied().find(|value| value.name() == name)
    }
}

/// A stored name: known to this admin, or not (kept as it was read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named<T> {
    /// One of `T`'s values.
    Known(T),
    /// A name `T` does not have.
    Unknown(String),
}

impl<T: KnownName> Named<T> {
    /// The value, if this admin knows the name.
    pub fn known(&self) -> Option<T> {
        match self {
            Self::Known(value) => Some(*value),
            Self::Unknown(_) => None,
        }
    }

    /// Whether this is `value`.
    pub fn is(&self, value: T) -> bool {
        self.known() == Some(value)
    }

    /// The name as stored.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Known(value) => value.name(),
            Self::Unknown(name) => name,
        }
    }
}

impl<T: KnownName> From<T> for Named<T> {
    fn from(value: T) -> Self {
        Self::Known(value)
    }
}

impl<T: KnownName> From<String> for Named<T> {
    fn from(name: String) -> Self {
        T::from_name(&name).map_or(Self::Unknown(name), Self::Known)
    }
}

impl<T: KnownName> From<&str> for Named<T> {
    fn from(name: &str) -> Self {
        T::from_name(name).map_or_else(|| Self::Unknown(name.to_owned()), Self::Known)
    }
}

impl<T: KnownName> fmt::Display for Named<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl<T: KnownName> Serialize for Named<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Any name deserializes: the API's input shapes take a name as text and the form's check
/// (`http/mgmt/job_input.rs`) refuses an unknown one with a 400 naming its field and the
/// names it may be, the same for a form, an OpenAPI call and each job of an import file.
impl<'de, T: KnownName> Deserialize<'de> for Named<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(String::deserialize(deserializer)?.into())
    }
}

impl<T, DB: Database> Type<DB> for Named<T>
where
    String: Type<DB>,
{
    fn type_info() -> DB::TypeInfo {
        <String as Type<DB>>::type_info()
    }

    fn compatible(ty: &DB::TypeInfo) -> bool {
        <String as Type<DB>>::compatible(ty)
    }
}

impl<'r, T: KnownName, DB: Database> Decode<'r, DB> for Named<T>
where
    String: Decode<'r, DB>,
{
    fn decode(value: <DB as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Self::from(<String as Decode<'r, DB>>::decode(value)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ScheduleType;

    #[test]
    fn stored_names_round_trip_and_unknown_ones_are_kept() {
        let known: Named<ScheduleType> = "FIX_RATE".into();
        assert_eq!(known, Named::Known(ScheduleType::FixRate));
        let odd: Named<ScheduleType> = "WEEKLY".into();
        assert_eq!((odd.known(), odd.as_str()), (None, "WEEKLY"));
        assert_eq!(serde_json::to_string(&odd).expect("json"), "\"WEEKLY\"");
    }

    #[test]
    fn input_keeps_any_name_for_the_check_to_judge() {
        let ok: Named<ScheduleType> = serde_json::from_str("\"CRON\"").expect("known");
        assert!(ok.is(ScheduleType::Cron));
        let odd: Named<ScheduleType> = serde_json::from_str("\"cron\"").expect("kept");
        assert_eq!(odd, Named::Unknown("cron".to_owned()));
    }
}

//! Time zones for schedules: the admin's local zone (upstream's only choice) and per-job
//! zones by IANA name (a jobwheel extension).

use chrono_tz::Tz;

/// An IANA zone name that chrono-tz does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown time zone `{0}` (expected an IANA name such as `Europe/Berlin`)")]
pub struct UnknownTimeZone(pub String);

/// Parses an IANA zone name such as `America/New_York` or `UTC`.
pub fn parse_time_zone(name: &str) -> Result<Tz, UnknownTimeZone> {
    name.trim().parse::<Tz>().map_err(|_| UnknownTimeZone(name.to_owned()))
}

/// The zone this process runs in, like upstream's `TimeZone.getDefault()`.
///
/// Honours `TZ`, then the system setting; falls back to UTC when neither names a zone
/// chrono-tz knows (e.g. a bare container without `/etc/localtime`).
pub fn local_time_zone() -> Tz {
    let from_env = std::env::var("TZ").ok().map(|tz| tz.trim_start_matches(':').to_owned());
    from_env
        .into_iter()
        .chain(iana_time_zone::get_timezone().ok())
        .find_map(|name| name.parse::<Tz>().ok())
        .unwrap_or(Tz::UTC)
}

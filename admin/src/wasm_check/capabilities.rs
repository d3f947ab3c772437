//! What a module version can reach (issue 62 item 4; docs/replay.md, "Capabilities and
//! approval"): the kinds of host call its imports use — outbound HTTP, clocks, random numbers,
//! environment (where variables and secrets arrive) — read from the module itself, and what its
//! job's grant lets those calls reach: hosts, the executor group's variables and secrets, limits.
//!
//! Kept free of the admin's other modules (the fuzz workspace compiles `wasm_check` on its own):
//! the grant's part is filled in where the grant is read (`http/mgmt/approvals.rs`, `reach`).
//!
//! [`widening`] compares two summaries and names each thing the second may do that the first
//! could not. It is deliberately conservative: a host entry that was not there before is new even
//! if an old entry covers it, and a limit set where the executor's default applied counts as
//! raised — the admin cannot know an executor's defaults — so nothing wider slips through as
//! "the same".

use std::collections::BTreeSet;

use serde::Serialize;

use super::ModuleInfo;

/// The kinds of host call that reach outside the sandbox, in the order they are shown.
pub const KINDS: [&str; 4] = ["http", "clocks", "random", "environment"];

/// A module version's reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Which of [`KINDS`] its imports use.
    pub imports: Vec<&'static str>,
    /// The network policy's entries (`httpAllow`), as the grant holds them.
    pub hosts: Vec<String>,
    /// The executor group's variables and secrets the job receives (`uses`).
    pub secrets: Vec<String>,
    /// The grant's limits; `None` is the executor's default.
    pub limits: Limits,
}

/// The limits of a grant that bound what a run may consume or fetch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub fuel: Option<i64>,
    pub memory_bytes: Option<i64>,
    pub http_max_requests: Option<i64>,
    pub http_max_response_bytes: Option<i64>,
    pub http_timeout_ms: Option<i64>,
}

impl Limits {
    /// Each limit with its API name.
    fn named(&self) -> [(&'static str, Option<i64>); 5] {
        [
            ("fuel", self.fuel),
            ("memoryBytes", self.memory_bytes),
            ("httpMaxRequests", self.http_max_requests),
            ("httpMaxResponseBytes", self.http_max_response_bytes),
            ("httpTimeoutMs", self.http_timeout_ms),
        ]
    }
}

/// The kind of host call an import is, if it reaches outside the sandbox. `import` is
/// `module.name` for a WASI preview 1 module and an interface name for a component.
pub fn import_kind(import: &str) -> Option<&'static str> {
    if let Some(call) = import.strip_prefix("wasi_snapshot_preview1.") {
        return match call {
            "clock_time_get" | "clock_res_get" => Some("clocks"),
            "random_get" => Some("random"),
            "environ_get" | "environ_sizes_get" => Some("environment"),
            _ => None,
        };
    }
    let interface = import.split('@').next().unwrap_or(import);
    match interface {
        "wasi:http/outgoing-handler" => Some("http"),
        "wasi:cli/environment" => Some("environment"),
        _ if interface.starts_with("wasi:clocks/") => Some("clocks"),
        _ if interface.starts_with("wasi:random/") => Some("random"),
        _ => None,
    }
}

/// The kinds `module`'s imports use, in [`KINDS`] order.
pub fn import_kinds(module: &ModuleInfo) -> Vec<&'static str> {
    let used: BTreeSet<&str> = module.imports.iter().filter_map(|i| import_kind(i)).collect();
    KINDS.into_iter().filter(|kind| used.contains(kind)).collect()
}

/// Each thing `after` may do that `before` could not, in words; empty when `after` reaches no
/// further (it may reach less).
pub fn widening(before: &Capabilities, after: &Capabilities) -> Vec<String> {
    let mut new = Vec::new();
    for kind in after.imports.iter().filter(|kind| !before.imports.contains(kind)) {
        new.push(format!("imports {kind}"));
    }
    for host in after.hosts.iter().filter(|host| !before.hosts.contains(host)) {
        new.push(format!("may reach {host}"));
    }
    for name in after.secrets.iter().filter(|name| !before.secrets.contains(name)) {
        new.push(format!("receives the group's {name}"));
    }
    for ((name, old), (_, new_limit)) in before.limits.named().into_iter().zip(after.limits.named()) {
        let raised = match (old, new_limit) {
            (Some(old), Some(limit)) => limit > old,
            (Some(_), None) => true,
            (None, Some(_)) => true,
            (None, None) => false,
        };
        if raised {
            let shown =
                |value: Option<i64>| value.map_or("the executor's default".to_owned(), |v| v.to_string());
            new.push(format!("{name} {} → {}", shown(old), shown(new_limit)));
        }
    }
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_sorted_into_kinds() {
        for (import, kind) in [
            ("wasi_snapshot_preview1.clock_time_get", Some("clocks")),
            ("wasi_snapshot_preview1.random_get", Some("random")),
            ("wasi_snapshot_preview1.environ_get", Some("environment")),
            ("wasi_snapshot_preview1.fd_write", None),
            ("wasi:http/outgoing-handler@0.2.12", Some("http")),
            ("wasi:http/types@0.2.12", None),
            ("wasi:clocks/monotonic-clock@0.2.0", Some("clocks")),
            ("wasi:random/insecure-seed@0.2.0", Some("random")),
            ("wasi:cli/environment@0.2.3", Some("environment")),
            ("wasi:cli/stdout@0.2.3", None),
        ] {
            assert_eq!(import_kind(import), kind, "{import}");
        }
    }

    #[test]
    fn only_what_is_new_widens() {
        let before = Capabilities {
            imports: vec!["clocks"],
            hosts: vec!["api.example.com:443".to_owned()],
            secrets: vec!["DB_PASSWORD".to_owned()],
            limits: Limits { fuel: Some(1_000), memory_bytes: None, ..Limits::default() },
        };
        let narrower = Capabilities {
            hosts: Vec::new(),
            limits: Limits { fuel: Some(500), ..before.limits },
            ..before.clone()
        };
        assert!(widening(&before, &narrower).is_empty());
        let wider = Capabilities {
            imports: vec!["http", "clocks"],
            hosts: vec!["api.example.com:443".to_owned(), "*.internal".to_owned()],
            secrets: vec!["DB_PASSWORD".to_owned(), "AWS_KEY".to_owned()],
            limits: Limits { fuel: None, memory_bytes: Some(1 << 20), ..Limits::default() },
        };
        assert_eq!(
            widening(&before, &wider),
            [
                "imports http",
                "may reach *.internal",
                "receives the group's AWS_KEY",
                "fuel 1000 → the executor's default",
                "memoryBytes the executor's default → 1048576",
            ]
        );
    }
}

//! From a provider's groups to jobwheel's rights: the role and the executor groups a user may
//! manage, by the provider's `map` (docs/sso.md). A user whom no rule names is refused, so a
//! provider shared with the whole company does not open jobwheel to the whole company.

use std::collections::BTreeSet;

use super::config::{GroupMapping, MappedRole};
use crate::store::GroupRow;

/// What the rules give one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Any matching rule with `role = "admin"` makes an administrator.
    pub admin: bool,
    /// The AppNames of every matching rule (unused for administrators).
    pub executor_groups: BTreeSet<String>,
    /// The provider's groups that matched, for the log and the audit entry.
    pub matched: Vec<String>,
}

/// How the provider's group names compare with the rules'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matching {
    /// Claim values are case-sensitive strings (OpenID Connect).
    Exact,
    /// LDAP's distinguished names, `cn` and most naming attributes compare ignoring case.
    IgnoreCase,
}

/// The rights `groups` earn under `rules`; `None` if no rule names any of them.
pub fn grant(rules: &[GroupMapping], groups: &[String], matching: Matching) -> Option<Grant> {
    let same = |a: &str, b: &str| match matching {
        Matching::Exact => a == b,
        // A directory's names: a DN compared without the spaces around its `,` and `=`.
        Matching::IgnoreCase => super::ldap::normal_dn(a).eq_ignore_ascii_case(&super::ldap::normal_dn(b)),
    };
    let mut admin = false;
    let mut executor_groups = BTreeSet::new();
    let mut matched = Vec::new();
    for rule in rules {
        let Some(group) = groups.iter().find(|g| same(g, &rule.group)) else { continue };
        if !matched.contains(group) {
            matched.push(group.clone());
        }
        admin |= rule.role == MappedRole::Admin;
        executor_groups.extend(rule.executor_groups.iter().cloned());
    }
    (!matched.is_empty()).then_some(Grant { admin, executor_groups, matched })
}

impl Grant {
    /// `xxl_job_user.permission` for a normal user: the ids of the executor groups whose AppName
    /// the grant names (several groups may share one), comma-separated as upstream keeps it;
    /// `None` for administrators and for a grant that names no existing group. AppNames that
    /// name no group are logged, not fatal: the group may be created later.
    pub fn permission(&self, groups: &[GroupRow], provider: &str) -> Option<String> {
        if self.admin {
            return None;
        }
        let mut ids = BTreeSet::new();
        for app in &self.executor_groups {
            let found: Vec<i32> =
                groups.iter().filter(|g| &g.group.app_name == app).map(|g| g.id.0).collect();
            if found.is_empty() {
                tracing::warn!(provider, app_name = %app, "an SSO mapping names an executor group that does not exist");
            }
            ids.extend(found);
        }
        (!ids.is_empty()).then(|| ids.iter().map(i32::to_string).collect::<Vec<_>>().join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(group: &str, role: MappedRole, apps: &[&str]) -> GroupMapping {
        GroupMapping {
            group: group.to_owned(),
            role,
            executor_groups: apps.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    fn names(groups: &[&str]) -> Vec<String> {
        groups.iter().map(|g| (*g).to_owned()).collect()
    }

    #[test]
    fn rules_add_up_and_an_unnamed_user_gets_nothing() {
        let rules = [
            rule("ops", MappedRole::User, &["billing", "mail"]),
            rule("dev", MappedRole::User, &["mail", "search"]),
            rule("root", MappedRole::Admin, &[]),
        ];
        let both = grant(&rules, &names(&["dev", "ops", "sales"]), Matching::Exact).expect("two rules match");
        assert!(!both.admin);
        assert_eq!(both.executor_groups, ["billing", "mail", "search"].map(str::to_owned).into());
        assert_eq!(both.matched, names(&["ops", "dev"]));
        assert!(grant(&rules, &names(&["root"]), Matching::Exact).is_some_and(|g| g.admin));
        assert_eq!(grant(&rules, &names(&["sales"]), Matching::Exact), None);
        assert_eq!(grant(&rules, &[], Matching::Exact), None);
        assert_eq!(grant(&rules, &names(&["OPS"]), Matching::Exact), None, "claims compare exactly");
        assert!(grant(&rules, &names(&["OPS"]), Matching::IgnoreCase).is_some(), "LDAP names ignore case");
    }
}

//! The network policy of a Wasm job: which origins a component may call through `wasi:http`,
//! and which non-public addresses those origins may resolve to.
//!
//! The syntax is part of the admin↔executor contract (the admin validates what a user saves, the
//! executor enforces what a trigger carries), so it lives here and both sides parse it the same
//! way. One entry per line:
//!
//! - an origin, `scheme://host[:port]`: `https://api.example.com`, `http://10.0.0.5:8080`,
//!   `https://*.example.com` (any subdomain, not the bare domain), `http://127.0.0.1:*` (any
//!   port). Without a scheme (`api.example.com`, `*.example.com`) an entry means `https` on 443.
//!   An origin whose host is an IP literal also grants that address;
//! - an address grant, `IP` or `IP/prefix` (`10.0.0.0/8`, `fd00::/8`): a name-matched origin
//!   may resolve to an address in it although the address is not public.
//!
//! A resolved address must be globally reachable (IANA special-purpose registries, via the
//! `ip_network` crate) and not multicast, unless an address grant covers it. That refuses
//! loopback, private, link-local (cloud metadata at 169.254.169.254 included), shared, reserved
//! and documentation ranges by default — and a DNS name cannot smuggle one in.

use std::fmt;
use std::net::IpAddr;

use ip_network::IpNetwork;

/// A parsed policy. The empty policy allows nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetPolicy {
    origins: Vec<OriginRule>,
    addresses: Vec<IpNetwork>,
}

/// A policy entry that does not parse, with the reason in words for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    /// The entry as written.
    pub entry: String,
    /// What is wrong with it.
    pub reason: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "network policy entry `{}`: {}", self.entry, self.reason)
    }
}

impl std::error::Error for PolicyError {}

#[derive(Debug, Clone, PartialEq, Eq)]
struct OriginRule {
    https: bool,
    host: HostRule,
    /// `None` = any port.
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostRule {
    /// Lower-case DNS name, matched exactly.
    Name(String),
    /// `*.example.com`, stored as `.example.com`.
    Suffix(String),
    Ip(IpAddr),
}

impl NetPolicy {
    /// Parses entries; blank entries and `#` comments are skipped.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<NetPolicy, PolicyError> {
        let mut policy = NetPolicy::default();
        for raw in entries {
            let entry = raw.as_ref().trim();
            if entry.is_empty() || entry.starts_with('#') {
                continue;
            }
            let error = |reason: &str| PolicyError { entry: entry.to_owned(), reason: reason.to_owned() };
            if let Some(network) = parse_network(entry).map_err(|reason| error(&reason))? {
                policy.addresses.push(network);
                continue;
            }
            let rule = parse_origin(entry).map_err(|reason| error(&reason))?;
            if let HostRule::Ip(ip) = rule.host {
                policy.addresses.push(IpNetwork::from(ip));
            }
            policy.origins.push(rule);
        }
        Ok(policy)
    }

    /// Whether nothing at all is allowed.
    pub fn is_empty(&self) -> bool {
        self.origins.is_empty()
    }

    /// Whether a request to `scheme://host:port` matches an origin. `host` is compared
    /// case-insensitively; IPv6 literals come without brackets.
    pub fn allows_origin(&self, https: bool, host: &str, port: u16) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
        let ip = host.parse::<IpAddr>().ok();
        self.origins.iter().any(|rule| {
            rule.https == https
                && rule.port.is_none_or(|p| p == port)
                && match &rule.host {
                    HostRule::Name(name) => *name == host,
                    HostRule::Suffix(suffix) => host.len() > suffix.len() && host.ends_with(suffix.as_str()),
                    HostRule::Ip(allowed) => ip.is_some_and(|ip| ip.to_canonical() == *allowed),
                }
        })
    }

    /// Whether an address grant covers `ip`.
    pub fn grants_address(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.addresses.iter().any(|network| network.contains(ip))
    }
}

/// Why an address is not public, for denial messages; `None` when it is public.
///
/// IPv6 addresses that carry an IPv4 address — NAT64 (`64:ff9b::/96`), IPv4-compatible
/// (`::a.b.c.d`) and 6to4 (`2002::/16`) — are judged by that IPv4 address, since a gateway
/// delivers them there; IPv4-mapped ones are canonicalised first. Prefixes the IANA
/// special-purpose registry does not mark globally reachable and that hide their destination —
/// local-use NAT64 (`64:ff9b:1::/48`), Teredo (`2001::/32`), discard-only (`100::/64`) and
/// benchmarking (`2001:2::/48`) — are refused outright.
pub fn non_public_class(ip: IpAddr) -> Option<&'static str> {
    let ip = ip.to_canonical();
    if let IpAddr::V6(v6) = ip {
        match ipv6_special(v6) {
            Some(Special::Embeds(v4)) => {
                return non_public_class(IpAddr::V4(v4)).map(|_| "a non-public IPv4 address inside IPv6");
            }
            Some(Special::Refused(class)) => return Some(class),
            None => {}
        }
    }
    if ip.is_multicast() {
        return Some("a multicast address");
    }
    if IpNetwork::from(ip).is_global() {
        return None;
    }
    Some(match ip {
        IpAddr::V4(v4) if v4.octets() == [169, 254, 169, 254] => "the cloud metadata address",
        _ if ip.is_loopback() => "a loopback address",
        _ if ip.is_unspecified() => "the unspecified address",
        IpAddr::V4(v4) if v4.is_private() => "a private address",
        IpAddr::V4(v4) if v4.is_link_local() => "a link-local address",
        IpAddr::V6(v6) if v6.is_unique_local() => "a private (unique local) address",
        IpAddr::V6(v6) if v6.is_unicast_link_local() => "a link-local address",
        _ => "not a globally reachable address",
    })
}

/// An IPv6 address that is judged by something other than its own prefix.
enum Special {
    /// It delivers to this IPv4 address.
    Embeds(std::net::Ipv4Addr),
    /// It is refused with this class.
    Refused(&'static str),
}

fn ipv6_special(v6: std::net::Ipv6Addr) -> Option<Special> {
    let s = v6.segments();
    let o = v6.octets();
    let last32 = || std::net::Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(Special::Embeds(last32()));
    }
    if s[..3] == [0x64, 0xff9b, 1] {
        return Some(Special::Refused("a local-use NAT64 address"));
    }
    // `::a.b.c.d` (deprecated IPv4-compatible); `::` and `::1` are handled as themselves.
    if s[..6] == [0; 6] && (s[6] != 0 || s[7] > 1) {
        return Some(Special::Embeds(last32()));
    }
    if s[0] == 0x2002 {
        return Some(Special::Embeds(std::net::Ipv4Addr::new(o[2], o[3], o[4], o[5])));
    }
    if s[..2] == [0x2001, 0] {
        return Some(Special::Refused("a Teredo address"));
    }
    if s[..4] == [0x100, 0, 0, 0] {
        return Some(Special::Refused("a discard-only address"));
    }
    if s[..3] == [0x2001, 2, 0] {
        return Some(Special::Refused("a benchmarking address"));
    }
    None
}

/// `Ok(None)` when the entry is not an address grant at all (an origin, then).
fn parse_network(entry: &str) -> Result<Option<IpNetwork>, String> {
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Ok(Some(IpNetwork::from(ip.to_canonical())));
    }
    match entry.split_once('/') {
        Some((address, _)) if address.parse::<IpAddr>().is_ok() => entry
            .parse::<IpNetwork>()
            .map(Some)
            // A security list should not silently widen `10.0.0.1/8` to `10.0.0.0/8`.
            .map_err(|_| {
                "not a network: the prefix length is out of range or address bits are set beyond it"
                    .to_owned()
            }),
        _ => Ok(None),
    }
}

fn parse_origin(entry: &str) -> Result<OriginRule, String> {
    let (https, rest) = match entry.split_once("://") {
        Some((scheme, rest)) => match scheme.to_ascii_lowercase().as_str() {
            "https" => (true, rest),
            "http" => (false, rest),
            other => return Err(format!("scheme `{other}` is not allowed; use http or https")),
        },
        None => (true, entry),
    };
    if rest.contains(['/', '?', '#', '@']) {
        return Err("write an origin only (scheme://host[:port]), without path, query or user".to_owned());
    }
    let (host, port) = split_host_port(rest)?;
    let port = match port {
        None => Some(if https { 443 } else { 80 }),
        Some("*") => None,
        Some(text) => match text.parse::<u16>() {
            Ok(port) if port > 0 => Some(port),
            _ => return Err(format!("`{text}` is not a port (1-65535 or *)")),
        },
    };
    let host = host.to_ascii_lowercase();
    let host = if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        HostRule::Ip(ip.to_canonical())
    } else if let Some(domain) = host.strip_prefix("*.") {
        check_name(domain)?;
        HostRule::Suffix(format!(".{domain}"))
    } else {
        check_name(&host)?;
        HostRule::Name(host)
    };
    Ok(OriginRule { https, host, port })
}

fn split_host_port(rest: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(after) = rest.strip_prefix('[') {
        let (inside, tail) = after.split_once(']').ok_or("unclosed `[` in an IPv6 address")?;
        return match tail.strip_prefix(':') {
            Some(port) => Ok((inside, Some(port))),
            None if tail.is_empty() => Ok((inside, None)),
            None => Err(format!("unexpected `{tail}` after the address")),
        };
    }
    Ok(match rest.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (rest, None),
    })
}

fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
        });
    if valid { Ok(()) } else { Err(format!("`{name}` is not a host name, IP address or *.domain")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(entries: &[&str]) -> NetPolicy {
        NetPolicy::parse(entries).unwrap()
    }

    #[test]
    fn origins_match_scheme_host_and_port() {
        let p = policy(&[
            "https://api.example.com",
            "http://10.0.0.5:8080",
            "*.example.org",
            "http://127.0.0.1:*",
        ]);
        assert!(p.allows_origin(true, "API.example.com", 443));
        assert!(!p.allows_origin(false, "api.example.com", 443), "scheme must match");
        assert!(!p.allows_origin(true, "api.example.com", 8443), "port must match");
        assert!(p.allows_origin(false, "10.0.0.5", 8080));
        assert!(p.allows_origin(true, "a.b.example.org", 443));
        assert!(!p.allows_origin(true, "example.org", 443), "a wildcard is subdomains only");
        assert!(!p.allows_origin(true, "evilexample.org", 443));
        assert!(p.allows_origin(false, "127.0.0.1", 9));
        assert!(!p.allows_origin(false, "localhost", 9));
    }

    #[test]
    fn ip_origins_and_cidrs_grant_addresses() {
        let p = policy(&["http://10.0.0.5:8080", "192.168.0.0/16", "::1"]);
        assert!(p.grants_address("10.0.0.5".parse().unwrap()));
        assert!(!p.grants_address("10.0.0.6".parse().unwrap()));
        assert!(p.grants_address("192.168.4.4".parse().unwrap()));
        assert!(p.grants_address("::ffff:10.0.0.5".parse().unwrap()), "mapped addresses are canonical");
        assert!(p.grants_address("::1".parse().unwrap()));
        assert!(!p.allows_origin(false, "192.168.4.4", 80), "an address grant is not an origin");
    }

    #[test]
    fn classes_of_non_public_addresses() {
        for (ip, class) in [
            ("127.0.0.1", "a loopback address"),
            ("169.254.169.254", "the cloud metadata address"),
            ("10.1.2.3", "a private address"),
            ("169.254.1.1", "a link-local address"),
            ("224.0.0.1", "a multicast address"),
            ("::ffff:127.0.0.1", "a loopback address"),
            ("fd00::1", "a private (unique local) address"),
            ("100.64.0.1", "not a globally reachable address"),
            ("0.0.0.0", "the unspecified address"),
        ] {
            assert_eq!(non_public_class(ip.parse().unwrap()), Some(class), "{ip}");
        }
        for ip in ["1.1.1.1", "2606:4700::1111", "64:ff9b::101:101", "2002:101:101::1"] {
            assert_eq!(non_public_class(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn ipv6_forms_of_non_public_ipv4_addresses_are_not_public() {
        // The review's list (M5): each reaches a private, loopback or metadata address through a
        // translator, or has no global destination at all.
        for (ip, class) in [
            ("64:ff9b::7f00:1", "a non-public IPv4 address inside IPv6"),
            ("64:ff9b::a9fe:a9fe", "a non-public IPv4 address inside IPv6"),
            ("64:ff9b::a00:5", "a non-public IPv4 address inside IPv6"),
            ("64:ff9b:1::1", "a local-use NAT64 address"),
            ("::7f00:1", "a non-public IPv4 address inside IPv6"),
            ("2002:7f00:1::1", "a non-public IPv4 address inside IPv6"),
            ("2002:a9fe:a9fe::1", "a non-public IPv4 address inside IPv6"),
            ("2001:0:4136:e378::1", "a Teredo address"),
            ("100::1", "a discard-only address"),
            ("2001:2::1", "a benchmarking address"),
            ("::1", "a loopback address"),
            ("::", "the unspecified address"),
        ] {
            assert_eq!(non_public_class(ip.parse().unwrap()), Some(class), "{ip}");
        }
    }

    #[test]
    fn bad_entries_say_why() {
        for (entry, reason) in [
            ("ftp://example.com", "scheme `ftp`"),
            ("https://example.com/path", "origin only"),
            ("https://user@example.com", "origin only"),
            ("https://example.com:0", "not a port"),
            ("https://exa mple.com", "not a host name"),
            ("https://*.", "not a host name"),
            ("10.0.0.0/33", "not a network"),
            ("10.0.0.1/8", "not a network"),
        ] {
            let error = NetPolicy::parse(&[entry]).unwrap_err();
            assert!(error.to_string().contains(reason), "{entry}: {error}");
        }
        assert!(NetPolicy::parse(&["", "  # comment"]).unwrap().is_empty());
    }
}

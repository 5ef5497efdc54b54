//! Where a webhook may reach (`TVBO_WEBHOOK_ALLOW`, docs/events.md, "Outbound safety"):
//! no host unless the operator lists it, and, whatever a listed name resolves to, no
//! loopback, private, link-local or other address that is not public unless the list names
//! that address or its network, so that a tenant cannot make the server call into the
//! network it sits in.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use url::{Host, Url};

use crate::domain::InvalidInput;

/// Longest webhook URL accepted.
pub const MAX_URL_CHARS: usize = 2048;

/// IPv4 networks that are not public: "this network" (0.0.0.0 included), private
/// (RFC 1918), shared (CGNAT, RFC 6598), loopback, link-local, IETF protocol assignments,
/// documentation, the 6to4 relay, benchmarking, multicast, reserved (broadcast included).
const NOT_PUBLIC_V4: [Ipv4Net; 15] = [
    v4(0, 0, 0, 0, 8),
    v4(10, 0, 0, 0, 8),
    v4(100, 64, 0, 0, 10),
    v4(127, 0, 0, 0, 8),
    v4(169, 254, 0, 0, 16),
    v4(172, 16, 0, 0, 12),
    v4(192, 0, 0, 0, 24),
    v4(192, 0, 2, 0, 24),
    v4(192, 88, 99, 0, 24),
    v4(192, 168, 0, 0, 16),
    v4(198, 18, 0, 0, 15),
    v4(198, 51, 100, 0, 24),
    v4(203, 0, 113, 0, 24),
    v4(224, 0, 0, 0, 4),
    v4(240, 0, 0, 0, 4),
];

/// IPv6's global unicast space (2000::/3): every other IPv6 address is not public
/// (loopback, unspecified, ULA fc00::/7, link-local fe80::/10, multicast, …).
const GLOBAL_V6: Ipv6Net = v6([0x2000, 0, 0, 0, 0, 0, 0, 0], 3);

/// The parts of [`GLOBAL_V6`] that are not public either: IETF protocol assignments
/// (Teredo included), documentation, 6to4 (it carries IPv4 addresses, private ones too).
const NOT_PUBLIC_GLOBAL_V6: [Ipv6Net; 4] = [
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23),
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32),
    v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16),
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20),
];

/// NAT64's well-known prefix (RFC 6052): an address in it stands for the IPv4 address in
/// its last 32 bits, and is public when that one is.
const NAT64: Ipv6Net = v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96);

/// IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`), compared as the IPv4 address they map.
const MAPPED: Ipv6Net = v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96);

/// Cloud metadata and credential endpoints: reached only through an address entry naming
/// them, never through a network entry (`fd00::/8` holds AWS's fd00:ec2::254).
const METADATA: [IpAddr; 4] = [
    IpAddr::V4(Ipv4Addr::new(169, 254, 169, 254)),
    IpAddr::V4(Ipv4Addr::new(169, 254, 170, 2)),
    IpAddr::V4(Ipv4Addr::new(100, 100, 100, 200)),
    IpAddr::V6(Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)),
];

const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix)
}

const fn v6(segments: [u16; 8], prefix: u8) -> Ipv6Net {
    let [a, b, c, d, e, f, g, h] = segments;
    Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, d, e, f, g, h), prefix)
}

/// Whether `ip` is a public address: one a webhook may reach without the allow list
/// naming it. IPv4-mapped and NAT64 addresses are judged by the IPv4 address they carry.
pub fn is_public(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(ip) => !NOT_PUBLIC_V4.iter().any(|net| net.contains(&ip)),
        IpAddr::V6(ip) if NAT64.contains(&ip) => {
            let [.., a, b, c, d] = ip.octets();
            is_public(IpAddr::V4(Ipv4Addr::new(a, b, c, d)))
        }
        IpAddr::V6(ip) => {
            GLOBAL_V6.contains(&ip) && !NOT_PUBLIC_GLOBAL_V6.iter().any(|net| net.contains(&ip))
        }
    }
}

/// One entry of the list.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Rule {
    /// A name (`hooks.example.com`) or every name under one (`*.example.com`), on one port
    /// or any. Its addresses must be public, or allowed by an address or network entry.
    Name {
        name: String,
        wildcard: bool,
        port: Option<u16>,
    },
    /// An address (`127.0.0.1:9000`, `[::1]`, `::1`), on one port or any: as a URL's host,
    /// and as where a name resolves.
    Address { ip: IpAddr, port: Option<u16> },
    /// Every address of a network (`10.1.0.0/16`, `fd00::/8`) on any port, but the
    /// [`METADATA`] ones.
    Network(IpNet),
}

/// A `TVBO_WEBHOOK_ALLOW` entry that is neither a host nor a network.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("TVBO_WEBHOOK_ALLOW: {entry:?} {reason}")]
pub struct InvalidAllowEntry {
    entry: String,
    reason: String,
}

/// The operator's list of where webhooks may go.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowList {
    rules: Vec<Rule>,
}

impl AllowList {
    /// Parses a comma-separated list (`TVBO_WEBHOOK_ALLOW`); an empty one allows nothing.
    /// Refuses an entry with an empty label (`..example.com`, `example.com.`), a wildcard
    /// over nothing or over a top-level domain (`*.`, `*.com`), a wildcard anywhere but in
    /// front, port 0, a path, credentials, and a network with bits set past its prefix.
    pub fn parse(text: &str) -> Result<AllowList, InvalidAllowEntry> {
        let rules = text
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                Rule::parse(entry).map_err(|reason| InvalidAllowEntry {
                    entry: entry.to_string(),
                    reason,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AllowList { rules })
    }

    /// Whether no host is allowed (webhooks are off).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// `url` checked as a webhook's address: http or https, no credentials, a port other
    /// than 0, and a host the list allows (a name by a name entry, an address by an address
    /// or network entry). Where a name resolves is checked at each connection
    /// ([`Self::permits`]). The error names the field `url`.
    pub fn check(&self, url: &str) -> Result<Url, InvalidInput> {
        let invalid = |message: String| InvalidInput::new("url", message);
        if url.chars().count() > MAX_URL_CHARS {
            return Err(invalid(format!("longer than {MAX_URL_CHARS} characters")));
        }
        let parsed = Url::parse(url).map_err(|e| invalid(format!("not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(invalid("must be an http or https URL".into()));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(invalid(
                "must not hold credentials (use the webhook's secret)".into(),
            ));
        }
        let host = parsed.host().ok_or_else(|| invalid("has no host".into()))?;
        let port = parsed.port_or_known_default().unwrap_or(0);
        if port == 0 {
            return Err(invalid("has port 0, which no receiver listens on".into()));
        }
        let allowed = match host {
            Host::Domain(name) => {
                let name = name.to_ascii_lowercase();
                if name.split('.').any(str::is_empty) {
                    return Err(invalid(format!("host {name} has an empty label")));
                }
                self.rules.iter().any(|rule| rule.allows_name(&name, port))
            }
            Host::Ipv4(ip) => self.covers(IpAddr::V4(ip), port),
            Host::Ipv6(ip) => self.covers(IpAddr::V6(ip), port),
        };
        if allowed {
            return Ok(parsed);
        }
        let host = parsed.host_str().unwrap_or_default();
        Err(invalid(if self.is_empty() {
            format!(
                "host {host} is not allowed: the server allows no webhook host \
                 (its operator lists them in TVBO_WEBHOOK_ALLOW)"
            )
        } else {
            format!("host {host} is not in the server's allow list (TVBO_WEBHOOK_ALLOW)")
        }))
    }

    /// Whether a webhook's connection may go to `ip` on `port`: a public address, or one an
    /// address or network entry allows. What every connection of a delivery or ping is
    /// checked against, whether its URL names an address or a name resolving to it.
    pub fn permits(&self, ip: IpAddr, port: u16) -> bool {
        is_public(ip) || self.covers(ip, port)
    }

    /// Whether an address or network entry allows `ip` on `port`.
    fn covers(&self, ip: IpAddr, port: u16) -> bool {
        let ip = ip.to_canonical();
        self.rules.iter().any(|rule| match rule {
            Rule::Address {
                ip: allowed,
                port: only,
            } => *allowed == ip && only.is_none_or(|only| only == port),
            Rule::Network(net) => net.contains(&ip) && !METADATA.contains(&ip),
            Rule::Name { .. } => false,
        })
    }
}

impl Rule {
    /// One entry, or why it is none.
    fn parse(entry: &str) -> Result<Rule, String> {
        if entry.contains('/') {
            let net: IpNet = entry
                .parse()
                .map_err(|_| "is not a network (such as 10.1.0.0/16 or fd00::/8)".to_string())?;
            if net.trunc() != net {
                return Err(format!(
                    "has bits set past its prefix length: the network is {}",
                    net.trunc()
                ));
            }
            if let IpNet::V6(v6) = net
                && MAPPED.contains(&v6)
            {
                return Err("is IPv4-mapped: write the IPv4 network".into());
            }
            return Ok(Rule::Network(net));
        }
        // A bare IPv6 address (`::1`) has colons that are not a port's.
        if let Ok(ip) = entry.parse::<IpAddr>() {
            return Ok(Rule::Address {
                ip: ip.to_canonical(),
                port: None,
            });
        }
        let (host, port) = split_port(entry)?;
        let (wildcard, host) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host),
        };
        if host.is_empty() {
            return Err("names no host".into());
        }
        match Host::parse(host).map_err(|e| format!("is not a host: {e}"))? {
            Host::Ipv4(_) | Host::Ipv6(_) if wildcard => {
                Err("is a wildcard over an address (wildcards are for names)".into())
            }
            Host::Ipv4(ip) => Ok(Rule::Address {
                ip: IpAddr::V4(ip),
                port,
            }),
            Host::Ipv6(ip) => Ok(Rule::Address {
                ip: IpAddr::V6(ip).to_canonical(),
                port,
            }),
            Host::Domain(name) => {
                let labels: Vec<&str> = name.split('.').collect();
                if labels.iter().any(|label| label.is_empty()) {
                    return Err("has an empty label".into());
                }
                let valid = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
                if !labels.iter().all(|label| label.bytes().all(valid)) {
                    return Err(
                        "is not a host name (a wildcard goes in front: *.example.com)".into(),
                    );
                }
                if wildcard && labels.len() < 2 {
                    return Err("would allow a whole top-level domain".into());
                }
                Ok(Rule::Name {
                    name,
                    wildcard,
                    port,
                })
            }
        }
    }

    /// Whether this is a name entry that allows the (lowercase) `name` on `port`: the name
    /// itself, or for a wildcard a name of one or more labels more.
    fn allows_name(&self, name: &str, port: u16) -> bool {
        let Rule::Name {
            name: allowed,
            wildcard,
            port: only,
        } = self
        else {
            return false;
        };
        let matches = if *wildcard {
            name.strip_suffix(allowed.as_str())
                .and_then(|prefix| prefix.strip_suffix('.'))
                .is_some_and(|prefix| !prefix.is_empty())
        } else {
            name == allowed
        };
        matches && only.is_none_or(|only| only == port)
    }
}

/// An entry's host and port (after the last colon, past an IPv6 address's bracket).
fn split_port(entry: &str) -> Result<(&str, Option<u16>), String> {
    let after_host = entry.find(']').map_or(0, |i| i + 1);
    let Some(colon) = entry[after_host..].find(':').map(|i| i + after_host) else {
        return Ok((entry, None));
    };
    match entry[colon + 1..].parse::<u16>() {
        Ok(0) => Err("has port 0, which no receiver listens on".into()),
        Ok(port) => Ok((&entry[..colon], Some(port))),
        Err(_) => Err("has no port (1 to 65535) after its colon".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn only_listed_hosts_and_ports_pass() {
        let list =
            AllowList::parse("hooks.example.com, *.chat.example, 127.0.0.1:9000, [::1]").unwrap();
        assert!(list.check("https://hooks.example.com/x").is_ok());
        assert!(list.check("https://HOOKS.example.com:8443/x").is_ok());
        assert!(list.check("https://a.chat.example/x").is_ok());
        assert!(list.check("https://chat.example/x").is_err());
        assert!(list.check("https://evilchat.example/x").is_err());
        assert!(list.check("http://127.0.0.1:9000/x").is_ok());
        assert!(list.check("http://127.0.0.1:9001/x").is_err());
        assert!(list.check("http://[::1]:5/x").is_ok());
        assert!(list.check("http://localhost:9000/x").is_err());
        assert!(list.check("https://user:pw@hooks.example.com/").is_err());
        assert!(list.check("ftp://hooks.example.com/").is_err());
        assert!(list.check("not a url").is_err());
        let error = list.check("http://10.0.0.1/").unwrap_err();
        assert_eq!(error.field, "url");
    }

    #[test]
    fn addresses_match_in_any_spelling() {
        let list = AllowList::parse("127.0.0.1:9000, 10.1.0.0/16, fd00::/8").unwrap();
        // The URL parser reads 0x7f.1 and 2130706433 as 127.0.0.1.
        for url in [
            "http://127.0.0.1:9000/",
            "http://0x7f.1:9000/",
            "http://2130706433:9000/",
            "http://[::ffff:127.0.0.1]:9000/",
            "http://10.1.200.3:1/",
            "http://[fd12::1]/",
        ] {
            assert!(list.check(url).is_ok(), "{url}");
        }
        for url in [
            "http://127.0.0.1:9001/",
            "http://10.2.0.1/",
            "http://[fe80::1]/",
        ] {
            assert!(list.check(url).is_err(), "{url}");
        }
    }

    #[test]
    fn empty_labels_and_port_zero_are_refused_in_urls() {
        let list = AllowList::parse("*.example.com, hooks.example.com").unwrap();
        for url in [
            "http://a..example.com/",
            "http://.example.com/",
            "http://hooks.example.com:0/",
        ] {
            let error = list.check(url).unwrap_err();
            assert_eq!(error.field, "url", "{url}");
        }
        assert!(list.check("http://a.b.example.com/").is_ok());
    }

    #[test]
    fn an_empty_list_allows_nothing_and_says_so() {
        let list = AllowList::parse(" , ").unwrap();
        assert!(list.is_empty());
        let error = list.check("http://127.0.0.1/").unwrap_err();
        assert!(
            error.message.contains("TVBO_WEBHOOK_ALLOW"),
            "{}",
            error.message
        );
    }

    #[test]
    fn entries_parse_into_names_addresses_and_networks() {
        let entries = "Hooks.Example.com:8443, *.b.example, 127.0.0.1:9000, [::1], ::2, \
                       10.1.0.0/16, fd00::/8";
        let list = AllowList::parse(entries).unwrap();
        assert_eq!(
            list.rules,
            vec![
                Rule::Name {
                    name: "hooks.example.com".into(),
                    wildcard: false,
                    port: Some(8443)
                },
                Rule::Name {
                    name: "b.example".into(),
                    wildcard: true,
                    port: None
                },
                Rule::Address {
                    ip: ip("127.0.0.1"),
                    port: Some(9000)
                },
                Rule::Address {
                    ip: ip("::1"),
                    port: None
                },
                Rule::Address {
                    ip: ip("::2"),
                    port: None
                },
                Rule::Network("10.1.0.0/16".parse().unwrap()),
                Rule::Network("fd00::/8".parse().unwrap()),
            ]
        );
        // A port given as the scheme's default still counts (no URL drops it).
        let list = AllowList::parse("hooks.example.com:80").unwrap();
        assert!(list.check("http://hooks.example.com/").is_ok());
        assert!(list.check("https://hooks.example.com/").is_err());
        // An IPv4-mapped address entry is its IPv4 address.
        let list = AllowList::parse("[::ffff:10.0.0.5]:80").unwrap();
        assert!(list.permits(ip("10.0.0.5"), 80));
    }

    #[test]
    fn malformed_entries_are_refused_naming_them() {
        for entry in [
            "..example.com",
            ".example.com",
            "example.com.",
            "a..example.com",
            "*.",
            "*.com",
            "*",
            "a.*.example.com",
            "*.*.example.com",
            "*.10.0.0.1",
            "example.com:0",
            "[::1]:0",
            "example.com:",
            "example.com:99999",
            "example.com:http",
            "http://x/path",
            "user@example.com",
            "10.1.2.3/16",
            "10.0.0.0/33",
            "fd00::/129",
            "::ffff:10.0.0.0/104",
            "example.com/24",
        ] {
            let error = AllowList::parse(&format!("ok.example.com, {entry}")).unwrap_err();
            let text = error.to_string();
            assert!(
                text.starts_with("TVBO_WEBHOOK_ALLOW: ") && text.contains(entry),
                "{entry}: {text}"
            );
        }
    }

    #[test]
    fn addresses_that_are_not_public_are_classified() {
        for text in [
            "0.0.0.0",
            "10.1.2.3",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.255.0.9",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.192",
            "192.0.2.1",
            "192.168.1.1",
            "198.18.0.1",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "64:ff9b:1::1",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            "2001:db8::1",
            "2001::1",
            "2002:a00:1::1",
        ] {
            assert!(!is_public(ip(text)), "{text} is not public");
        }
        for text in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.0",
            "172.32.0.1",
            "93.184.216.34",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2606:4700::1111",
            "2a00:1450:4001::1",
        ] {
            assert!(is_public(ip(text)), "{text} is public");
        }
    }

    #[test]
    fn connections_go_to_public_addresses_or_listed_ones() {
        let list = AllowList::parse(
            "hooks.example.com, 127.0.0.1:9000, 10.1.0.0/16, fd00::/8, 169.254.170.2",
        )
        .unwrap();
        assert!(list.permits(ip("93.184.216.34"), 443));
        // A name entry opens no address.
        assert!(!list.permits(ip("127.0.0.1"), 443));
        assert!(list.permits(ip("127.0.0.1"), 9000));
        assert!(list.permits(ip("::ffff:127.0.0.1"), 9000));
        assert!(!list.permits(ip("127.0.0.1"), 9001));
        assert!(!list.permits(ip("::1"), 9000));
        assert!(list.permits(ip("10.1.255.7"), 5432));
        assert!(!list.permits(ip("10.2.0.1"), 80));
        assert!(list.permits(ip("fd12:3456::1"), 80));
        // Metadata endpoints only by an address entry naming them.
        assert!(!list.permits(ip("fd00:ec2::254"), 80));
        assert!(list.permits(ip("169.254.170.2"), 80));
        assert!(!list.permits(ip("169.254.169.254"), 80));
        let everything = AllowList::parse("0.0.0.0/0, ::/0").unwrap();
        assert!(everything.permits(ip("192.168.0.1"), 80));
        assert!(!everything.permits(ip("169.254.169.254"), 80));
        assert!(!everything.permits(ip("::ffff:169.254.169.254"), 80));
    }
}

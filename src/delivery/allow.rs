//! Which hosts a webhook may reach (`TVBO_WEBHOOK_ALLOW`, docs/events.md, "Outbound
//! safety"): none unless the operator lists them, so that a tenant cannot make the server
//! call into the network it sits in.

use url::Url;

use crate::domain::InvalidInput;

/// Longest webhook URL accepted.
pub const MAX_URL_CHARS: usize = 2048;

/// One allowed host: an exact name or address (`hooks.example.com`, `127.0.0.1`, `[::1]`),
/// or every subdomain of a name (`*.example.com`), with or without a port.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rule {
    host: String,
    wildcard: bool,
    port: Option<u16>,
}

/// The operator's list of hosts webhooks may reach.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowList {
    rules: Vec<Rule>,
}

impl AllowList {
    /// Parses a comma-separated list (`TVBO_WEBHOOK_ALLOW`); an empty one allows nothing.
    pub fn parse(text: &str) -> Result<AllowList, String> {
        let rules = text
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let (wildcard, rest) = match entry.strip_prefix("*.") {
                    Some(rest) => (true, rest),
                    None => (false, entry),
                };
                // Parse as a URL's authority, which handles `[::1]:8080` and ports.
                let url = Url::parse(&format!("http://{rest}/"))
                    .map_err(|e| format!("TVBO_WEBHOOK_ALLOW: {entry:?} is not a host: {e}"))?;
                let host = url
                    .host_str()
                    .filter(|_| url.path() == "/" && url.username().is_empty())
                    .ok_or_else(|| format!("TVBO_WEBHOOK_ALLOW: {entry:?} is not a host"))?;
                let port = url.port();
                Ok(Rule {
                    host: host.to_ascii_lowercase(),
                    wildcard,
                    port,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(AllowList { rules })
    }

    /// Whether no host is allowed (webhooks are off).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// `url` checked as a webhook's address: http or https, no credentials, a host the list
    /// allows. The error names the field `url`.
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
        let host = parsed
            .host_str()
            .ok_or_else(|| invalid("has no host".into()))?
            .to_ascii_lowercase();
        let port = parsed.port_or_known_default();
        if self.rules.iter().any(|rule| rule.allows(&host, port)) {
            return Ok(parsed);
        }
        Err(invalid(if self.is_empty() {
            format!(
                "host {host} is not allowed: the server allows no webhook host \
                 (its operator lists them in TVBO_WEBHOOK_ALLOW)"
            )
        } else {
            format!("host {host} is not in the server's allow list (TVBO_WEBHOOK_ALLOW)")
        }))
    }
}

impl Rule {
    fn allows(&self, host: &str, port: Option<u16>) -> bool {
        let host_matches = if self.wildcard {
            host.strip_suffix(&self.host)
                .is_some_and(|prefix| prefix.ends_with('.') && prefix.len() > 1)
        } else {
            host == self.host
        };
        host_matches && self.port.is_none_or(|p| Some(p) == port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn an_empty_list_allows_nothing_and_says_so() {
        let list = AllowList::parse(" , ").unwrap();
        assert!(list.is_empty());
        let error = list.check("http://127.0.0.1/").unwrap_err();
        assert!(
            error.message.contains("TVBO_WEBHOOK_ALLOW"),
            "{}",
            error.message
        );
        assert!(AllowList::parse("http://x/path").is_err());
    }
}

//! Access rules in pywb's `.aclj` format, and the decision they give for a
//! SURT key.
//!
//! A rules file holds one rule per line, `SURT-PREFIX - {"access": ...}`,
//! where access is `allow`, `block` (listed, not replayed), `exclude`
//! (never shown) or `allow_ignore_embargo`. A key ending in `###` applies
//! to that exact key only; `*,` applies to every key. pywb keeps the file
//! in reverse byte order and takes the first rule, scanning down from the
//! key, whose prefix the key starts with: the most specific rule wins.
//! [`Rules::access`] makes the same scan, including where pywb stops (at
//! the first rule below the key's first SURT segment), so the same file
//! gives the same decisions. Rules naming a `user` apply to that user
//! only and are skipped for anonymous queries, as in pywb; date limits
//! (`before`, `after`) are honoured, and a rule whose date condition
//! fails gives the default access.

use std::fmt;

/// What a rule allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Allow,
    Block,
    Exclude,
    AllowIgnoreEmbargo,
}

impl Access {
    fn parse(s: &str) -> Option<Access> {
        Some(match s {
            "allow" => Access::Allow,
            "block" => Access::Block,
            "exclude" => Access::Exclude,
            "allow_ignore_embargo" => Access::AllowIgnoreEmbargo,
            _ => return None,
        })
    }

    /// The name pywb writes in an answer's `access` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Allow => "allow",
            Access::Block => "block",
            Access::Exclude => "exclude",
            Access::AllowIgnoreEmbargo => "allow_ignore_embargo",
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rules file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("line {line}: {reason}")]
    BadRule { line: usize, reason: String },
}

#[derive(Clone, Debug)]
struct Rule {
    key: Vec<u8>,
    /// `None`: a rule without a valid `access` (pywb then excludes).
    access: Option<Access>,
    user: bool,
    before: Option<Vec<u8>>,
    after: Option<Vec<u8>>,
}

/// A set of access rules.
#[derive(Clone, Debug)]
pub struct Rules {
    /// In descending byte order of their keys, as pywb scans them.
    rules: Vec<Rule>,
    default: Access,
}

impl Rules {
    /// Reads `.aclj` text (any line order; blank lines skipped).
    pub fn parse(text: &[u8]) -> Result<Rules, Error> {
        let mut rules = Vec::new();
        for (i, line) in text.split(|&b| b == b'\n').enumerate() {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let bad = |reason: &str| Error::BadRule {
                line: i + 1,
                reason: reason.to_string(),
            };
            let mut parts = line.splitn(3, |&b| b == b' ');
            let key = parts.next().unwrap_or_default().to_vec();
            let _timestamp = parts.next();
            let json = parts
                .next()
                .ok_or_else(|| bad("expected `SURT - {json}`"))?;
            let obj: serde_json::Value = serde_json::from_slice(json)
                .map_err(|e| bad(&format!("the JSON block does not parse: {e}")))?;
            let text = |name: &str| {
                obj.get(name)
                    .and_then(|v| v.as_str())
                    .map(|s| s.as_bytes().to_vec())
            };
            rules.push(Rule {
                key,
                access: obj
                    .get("access")
                    .and_then(|v| v.as_str())
                    .and_then(Access::parse),
                user: obj.get("user").is_some_and(|u| !u.is_null() && u != ""),
                before: text("before"),
                after: text("after"),
            });
        }
        rules.sort_by(|a, b| b.key.cmp(&a.key));
        Ok(Rules {
            rules,
            default: Access::Allow,
        })
    }

    /// The access given where no rule applies (pywb's `default_access`,
    /// `allow` unless set).
    pub fn with_default(mut self, default: Access) -> Rules {
        self.default = default;
        self
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules that deny replay to everyone at all times (`exclude` or
    /// `block`, no user, no date limit), as `(key, exact)`: the SURT prefix,
    /// or with `exact` the one key of a `###` rule. A MementoMap writes a
    /// zero entry for each.
    pub fn denied(&self) -> Vec<(Vec<u8>, bool)> {
        self.rules
            .iter()
            .filter(|r| matches!(r.access, Some(Access::Exclude | Access::Block) | None))
            .filter(|r| !r.user && r.before.is_none() && r.after.is_none())
            .map(|r| match r.key.strip_suffix(b"###") {
                Some(k) => (k.to_vec(), true),
                None => (r.key.clone(), false),
            })
            .collect()
    }

    /// `allow` rules inside a denied prefix (their captures are allowed
    /// while the prefix around them is not).
    pub fn allowed_inside_denied(&self) -> Vec<Vec<u8>> {
        let denied = self.denied();
        self.rules
            .iter()
            .filter(|r| matches!(r.access, Some(Access::Allow | Access::AllowIgnoreEmbargo)))
            .filter(|r| {
                denied
                    .iter()
                    .any(|(k, exact)| !exact && r.key.starts_with(k) && r.key != *k)
            })
            .map(|r| r.key.clone())
            .collect()
    }

    /// Whether `text` reads as `.aclj` rules (its first rule line is
    /// `KEY - {...}`) rather than a list of prefixes.
    pub fn looks_like_aclj(text: &[u8]) -> bool {
        text.split(|&b| b == b'\n')
            .map(<[u8]>::trim_ascii)
            .find(|l| !l.is_empty() && !l.starts_with(b"#"))
            .is_some_and(|l| {
                let mut parts = l.splitn(3, |&b| b == b' ');
                let _key = parts.next();
                parts.next() == Some(b"-") && parts.next().is_some_and(|j| j.starts_with(b"{"))
            })
    }

    /// The access to a capture of `key` (its SURT) at `datetime`.
    pub fn access(&self, key: &[u8], datetime: &[u8]) -> Access {
        let mut exact = key.to_vec();
        exact.extend_from_slice(b"###");
        let mut start = exact.clone();
        start.push(b'#');
        let tld = key.split(|&b| b == b',').next().unwrap_or_default();
        // The first rule at or below `key####` in descending order.
        let from = self.rules.partition_point(|r| r.key > start);
        for rule in &self.rules[from..] {
            let applies = rule.key == exact || key.starts_with(&rule.key) || rule.key == b"*,";
            if applies && !rule.user {
                return self.decide(rule, datetime);
            }
            if &rule.key[..] < tld {
                break;
            }
        }
        self.default
    }

    fn decide(&self, rule: &Rule, datetime: &[u8]) -> Access {
        let Some(access) = rule.access else {
            return Access::Exclude;
        };
        let dt = pad14(datetime);
        if let Some(before) = &rule.before {
            return if dt < pad14(before) {
                access
            } else {
                self.default
            };
        }
        if let Some(after) = &rule.after {
            return if dt > pad14(after) {
                access
            } else {
                self.default
            };
        }
        access
    }
}

/// A datetime padded to 14 digits the way warcio pads a partial one for a
/// comparison (missing parts at their lowest).
fn pad14(dt: &[u8]) -> Vec<u8> {
    const LOW: &[u8] = b"00000101000000";
    let mut v: Vec<u8> = dt.iter().copied().take(14).collect();
    if v.len() < 14 {
        v.extend_from_slice(&LOW[v.len()..]);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &[u8] = br#"com,example)/ - {"access": "allow"}
com,example)/private - {"access": "exclude"}
com,example)/private/ok - {"access": "allow"}
com,example)/blocked### - {"access": "block"}
org,other, - {"access": "block"}
org,other)/x - {"access": "allow", "user": "staff"}
"#;

    #[test]
    fn the_most_specific_rule_wins() {
        let r = Rules::parse(RULES).unwrap();
        let a = |k: &str| r.access(k.as_bytes(), b"20200101000000");
        assert_eq!(a("com,example)/"), Access::Allow);
        assert_eq!(a("com,example)/private/page"), Access::Exclude);
        assert_eq!(a("com,example)/private/ok/page"), Access::Allow);
        // `###` is for the exact key only; below it the prefix rule holds.
        assert_eq!(a("com,example)/blocked"), Access::Block);
        assert_eq!(a("com,example)/blocked/page"), Access::Allow);
        assert_eq!(a("org,other,www)/"), Access::Block);
        // A user's rule does not apply to anonymous queries.
        assert_eq!(a("org,other)/x"), Access::Allow);
        assert_eq!(a("net,unlisted)/"), Access::Allow);
        let strict = Rules::parse(RULES).unwrap().with_default(Access::Block);
        assert_eq!(strict.access(b"net,unlisted)/", b"2020"), Access::Block);
    }

    #[test]
    fn exact_rules_and_dates() {
        let r = Rules::parse(
            br#"com,a)/x### - {"access": "block"}
com,a)/ - {"access": "exclude", "before": "2010"}
"#,
        )
        .unwrap();
        assert_eq!(r.access(b"com,a)/x", b"2020"), Access::Block);
        assert_eq!(r.access(b"com,a)/", b"20090101000000"), Access::Exclude);
        assert_eq!(r.access(b"com,a)/", b"20110101000000"), Access::Allow);
    }

    #[test]
    fn bad_lines_are_reported_with_their_number() {
        let e = Rules::parse(b"com,a)/ - {\"access\": \"allow\"}\ncom,b)/ -\n").unwrap_err();
        assert!(e.to_string().starts_with("line 2:"), "{e}");
    }
}

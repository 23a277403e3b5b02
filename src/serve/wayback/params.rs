//! The query string of the Wayback CDX server API, checked: every
//! parameter the Internet Archive's server documents, read into
//! [`Params`], or a message for a 400 naming the parameter.
//!
//! Pure (no files, no index): the fuzz target `wayback_params` runs it on
//! any bytes. Field names are IA's (`original`, `mimetype`, `statuscode`,
//! ...) or pywb's (`url`, `mime`, `status`), which clients such as
//! cdx_toolkit send to servers they take for pywb.

/// Fields of a capture, in the order of a CDX11 line (`N b a m s k r M S
/// V g`): filters without a field name match this line's text, and a
/// field may be named by its number in it.
pub const FIELDS: [&str; 11] = [
    "urlkey",
    "timestamp",
    "original",
    "mimetype",
    "statuscode",
    "digest",
    "redirect",
    "robotflags",
    "length",
    "offset",
    "filename",
];

/// The fields answered when `fl` is not given (the Wayback Machine's
/// public ones).
pub const DEFAULT_FIELDS: [Field; 7] = [
    Field::Index(0),
    Field::Index(1),
    Field::Index(2),
    Field::Index(3),
    Field::Index(4),
    Field::Index(5),
    Field::Index(8),
];

/// A field of an answer line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// One of [`FIELDS`].
    Index(usize),
    /// `dupecount` (`showDupeCount`).
    DupeCount,
    /// `skipcount` (`showSkipCount`).
    SkipCount,
    /// `groupcount` (`showGroupCount`).
    GroupCount,
    /// `endtimestamp` (`lastSkipTimestamp`).
    EndTimestamp,
    /// `uniqcount` (`showUniqCount`).
    UniqCount,
}

impl Field {
    /// A field by IA's name, pywb's, or its number in [`FIELDS`].
    pub fn named(name: &str) -> Option<Field> {
        let name = match name {
            "url" => "original",
            "mime" => "mimetype",
            "status" => "statuscode",
            "redirecturl" => "redirect",
            "dupecount" => return Some(Field::DupeCount),
            "skipcount" => return Some(Field::SkipCount),
            "groupcount" => return Some(Field::GroupCount),
            "endtimestamp" => return Some(Field::EndTimestamp),
            "uniqcount" => return Some(Field::UniqCount),
            other => other,
        };
        if let Some(i) = FIELDS.iter().position(|f| *f == name) {
            return Some(Field::Index(i));
        }
        match name.parse::<usize>() {
            Ok(i) if i < FIELDS.len() => Some(Field::Index(i)),
            _ => None,
        }
    }

    /// The name written in a JSON answer's header row.
    pub fn name(self) -> &'static str {
        match self {
            Field::Index(i) => FIELDS[i],
            Field::DupeCount => "dupecount",
            Field::SkipCount => "skipcount",
            Field::GroupCount => "groupcount",
            Field::EndTimestamp => "endtimestamp",
            Field::UniqCount => "uniqcount",
        }
    }
}

/// How the URL selects keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Match {
    Exact,
    Prefix,
    Host,
    Domain,
}

/// The order of the answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sort {
    /// Index order.
    Regular,
    /// Newest first.
    Reverse,
    /// Nearest to a datetime first.
    Closest(String),
}

/// `filter=[~][!]field:regex` (or a regex of the whole line).
#[derive(Clone, Debug)]
pub struct Filter {
    pub invert: bool,
    /// `None`: the whole CDX11 line.
    pub field: Option<Field>,
    pub test: Test,
}

#[derive(Clone, Debug)]
pub enum Test {
    /// The value matches the regex whole (Java's `matches()`).
    Regex(regex::Regex),
    /// The value contains the text (`~`).
    Contains(String),
}

impl Filter {
    /// Whether `value` passes.
    pub fn accepts(&self, value: &str) -> bool {
        let hit = match &self.test {
            Test::Regex(rx) => rx.is_match(value),
            Test::Contains(s) => value.contains(s.as_str()),
        };
        hit != self.invert
    }
}

/// `collapse=field` or `collapse=field:N`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Collapse {
    pub field: Field,
    /// Compare the first N characters only (`None`: the whole value).
    pub chars: Option<usize>,
}

/// A checked query.
#[derive(Clone, Debug)]
pub struct Params {
    pub url: String,
    /// `None`: from the URL's `*` forms, else exact.
    pub match_type: Option<Match>,
    pub json: bool,
    /// `fl`, when given.
    pub fields: Option<Vec<Field>>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub filters: Vec<Filter>,
    pub collapses: Vec<Collapse>,
    /// 0: no limit; below 0: the last N.
    pub limit: i64,
    pub offset: u64,
    pub fast_latest: bool,
    pub sort: Sort,
    /// `limit=-1` or `last=true`: the newest line alone (read as
    /// `sort=reverse&limit=1`, with no resume key: nothing follows it).
    pub newest: bool,
    pub show_resume_key: bool,
    /// As received (the decoded parameter).
    pub resume_key: Option<String>,
    /// Below 0: not paged.
    pub page: i64,
    /// 0: the server's page size.
    pub page_size: i64,
    pub show_num_pages: bool,
    pub show_paged_index: bool,
    pub show_dupe_count: bool,
    pub show_skip_count: bool,
    pub show_group_count: bool,
    pub last_skip_timestamp: bool,
    pub show_uniq_count: bool,
    /// `gzip=`: `None` leaves it to `Accept-Encoding`.
    pub gzip: Option<bool>,
}

/// Longest compiled filter regex (bytes of the automaton): a bound on
/// what one query can make the server build.
const REGEX_SIZE: usize = 1 << 20;

/// Filters, collapses and fields a query may give.
const MAX_REPEATS: usize = 64;

impl Params {
    /// Reads a query string (`a=b&c=d`, percent-encoded).
    pub fn parse(query: &str) -> Result<Params, String> {
        let mut p = Params {
            url: String::new(),
            match_type: None,
            json: false,
            fields: None,
            from: None,
            to: None,
            filters: Vec::new(),
            collapses: Vec::new(),
            limit: 0,
            offset: 0,
            fast_latest: false,
            sort: Sort::Regular,
            newest: false,
            show_resume_key: false,
            resume_key: None,
            page: -1,
            page_size: 0,
            show_num_pages: false,
            show_paged_index: false,
            show_dupe_count: false,
            show_skip_count: false,
            show_group_count: false,
            last_skip_timestamp: false,
            show_uniq_count: false,
            gzip: None,
        };
        let mut url = None;
        let mut closest = None;
        let mut sort = None;
        let mut fl = None;
        let mut last = false;
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            let v = v.as_ref();
            match k.as_ref() {
                "url" => url = Some(v.to_string()),
                "matchType" if v.is_empty() => {}
                "matchType" => {
                    p.match_type = Some(match v {
                        "exact" => Match::Exact,
                        "prefix" => Match::Prefix,
                        "host" => Match::Host,
                        "domain" => Match::Domain,
                        _ => return Err(bad("matchType", v, "exact, prefix, host or domain")),
                    })
                }
                "output" => {
                    p.json = match v {
                        "json" => true,
                        "" | "text" | "cdx" => false,
                        _ => return Err(bad("output", v, "json or text")),
                    }
                }
                "fl" => fl = Some(v.to_string()),
                "from" => p.from = Some(datetime("from", v)?),
                "to" => p.to = Some(datetime("to", v)?),
                "closest" => closest = Some(datetime("closest", v)?),
                "sort" => sort = Some(v.to_string()),
                "filter" if v.is_empty() => {}
                "filter" => {
                    if p.filters.len() >= MAX_REPEATS {
                        return Err(format!("more than {MAX_REPEATS} filter= parameters"));
                    }
                    p.filters.push(filter(v)?);
                }
                "collapse" if v.is_empty() => {}
                "collapse" => {
                    if p.collapses.len() >= MAX_REPEATS {
                        return Err(format!("more than {MAX_REPEATS} collapse= parameters"));
                    }
                    p.collapses.push(collapse(v)?);
                }
                "limit" => p.limit = int("limit", v)?,
                "offset" => {
                    p.offset = u64::try_from(int("offset", v)?)
                        .map_err(|_| bad("offset", v, "a number of lines, 0 or more"))?
                }
                "fastLatest" => p.fast_latest = flag("fastLatest", v)?,
                "showResumeKey" => p.show_resume_key = flag("showResumeKey", v)?,
                "resumeKey" if v.is_empty() => {}
                "resumeKey" => p.resume_key = Some(v.to_string()),
                "page" => p.page = int("page", v)?,
                "pageSize" => p.page_size = int("pageSize", v)?,
                "showNumPages" => p.show_num_pages = flag("showNumPages", v)?,
                "showPagedIndex" => p.show_paged_index = flag("showPagedIndex", v)?,
                "showDupeCount" => p.show_dupe_count = flag("showDupeCount", v)?,
                "showSkipCount" => p.show_skip_count = flag("showSkipCount", v)?,
                "showGroupCount" => p.show_group_count = flag("showGroupCount", v)?,
                "lastSkipTimestamp" => p.last_skip_timestamp = flag("lastSkipTimestamp", v)?,
                "showUniqCount" => p.show_uniq_count = flag("showUniqCount", v)?,
                "last" => last = flag("last", v)?,
                "gzip" => p.gzip = Some(flag("gzip", v)?),
                // Asked by clients of IA's server, and answered the same
                // with or without them there (see FORMATS.md).
                _ => {}
            }
        }
        p.url = match url {
            Some(u) if !u.is_empty() => u,
            _ => return Err("the url= parameter is required".into()),
        };
        p.sort = match (sort.as_deref(), closest) {
            (None | Some("" | "regular" | "default"), None) => Sort::Regular,
            (Some("reverse"), None) => Sort::Reverse,
            (Some("closest") | None, Some(c)) => Sort::Closest(c),
            (Some("closest"), None) => {
                return Err("sort=closest needs closest=DATETIME (1 to 14 digits)".into())
            }
            (Some("reverse" | "" | "regular" | "default"), Some(_)) => {
                return Err("closest= goes with sort=closest (or no sort=)".into())
            }
            (Some(other), _) => {
                return Err(bad(
                    "sort",
                    other,
                    "regular (or default), reverse or closest",
                ))
            }
        };
        // IA's `limit=-1` (or `last=true`) is the newest line: the first
        // of the answer read backwards.
        if (last || p.limit == -1) && !matches!(p.sort, Sort::Closest(_)) {
            p.sort = Sort::Reverse;
            p.limit = 1;
            p.newest = true;
        }
        if let Some(fl) = fl.filter(|f| !f.is_empty()) {
            let mut fields = Vec::new();
            for name in fl.split(',').filter(|n| !n.is_empty()) {
                if fields.len() >= MAX_REPEATS {
                    return Err(format!("fl= names more than {MAX_REPEATS} fields"));
                }
                let f = Field::named(name).ok_or_else(|| unknown_field("fl", name))?;
                // A counter named in `fl` is counted, as IA counts
                // `groupcount`, `uniqcount` and `endtimestamp` there.
                match f {
                    Field::Index(_) => {}
                    Field::DupeCount => p.show_dupe_count = true,
                    Field::SkipCount => p.show_skip_count = true,
                    Field::GroupCount => p.show_group_count = true,
                    Field::EndTimestamp => p.last_skip_timestamp = true,
                    Field::UniqCount => p.show_uniq_count = true,
                }
                fields.push(f);
            }
            if !fields.is_empty() {
                p.fields = Some(fields);
            }
        }
        // `endtimestamp` is the end of a group: without `showGroupCount`,
        // that of `showSkipCount`'s (IA's README).
        if p.last_skip_timestamp && !p.show_group_count && !p.show_uniq_count {
            p.show_skip_count = true;
        }
        if p.show_num_pages && p.show_paged_index {
            return Err(
                "showNumPages=true and showPagedIndex=true cannot be asked together".into(),
            );
        }
        Ok(p)
    }

    /// The fields of each answer line.
    pub fn fields(&self) -> Vec<Field> {
        if let Some(f) = &self.fields {
            return f.clone();
        }
        let mut f = DEFAULT_FIELDS.to_vec();
        if self.show_dupe_count {
            f.push(Field::DupeCount);
        }
        if self.show_skip_count {
            f.push(Field::SkipCount);
        }
        if self.show_group_count {
            f.push(Field::GroupCount);
        }
        if self.last_skip_timestamp {
            f.push(Field::EndTimestamp);
        }
        if self.show_uniq_count {
            f.push(Field::UniqCount);
        }
        f
    }

    /// Whether a line's counters need the lines dropped after it.
    pub fn counts_groups(&self) -> bool {
        self.show_skip_count
            || self.show_group_count
            || self.last_skip_timestamp
            || self.show_uniq_count
    }
}

fn bad(name: &str, value: &str, expected: &str) -> String {
    format!("{name}={value}: expected {expected}")
}

fn unknown_field(param: &str, name: &str) -> String {
    format!(
        "{param}: no field named {name:?} (fields: {}, or their numbers 0-10; \
         url, mime and status are taken for original, mimetype and statuscode)",
        FIELDS.join(" ")
    )
}

/// IA's booleans (Spring's `getBooleanParameter`, which is lenient) read
/// strictly: a value it would take as false by accident is refused.
fn flag(name: &str, v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" | "" => Ok(false),
        _ => Err(bad(name, v, "true or false")),
    }
}

fn int(name: &str, v: &str) -> Result<i64, String> {
    v.trim()
        .parse::<i64>()
        .ok()
        .filter(|n| n.unsigned_abs() <= u64::from(u32::MAX))
        .ok_or_else(|| bad(name, v, "an integer"))
}

/// 1 to 14 digits (IA compares them as text with the captures' 14).
fn datetime(name: &str, v: &str) -> Result<String, String> {
    let v = v.trim();
    // `closest` may carry IA's before/after mark.
    let digits = if name == "closest" {
        v.trim_start_matches(['-', '^'])
    } else {
        v
    };
    if digits.is_empty() || digits.len() > 14 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(
            name,
            v,
            "a datetime of 1 to 14 digits (yyyyMMddhhmmss)",
        ));
    }
    Ok(digits.to_string())
}

fn filter(v: &str) -> Result<Filter, String> {
    let (contains, rest) = match v.strip_prefix('~') {
        Some(r) => (true, r),
        None => (false, v),
    };
    let (invert, rest) = match rest.strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let (field, pattern) = match rest.split_once(':') {
        Some((name, pattern)) => (
            Some(Field::named(name).ok_or_else(|| unknown_field("filter", name))?),
            pattern,
        ),
        None => (None, rest),
    };
    if matches!(field, Some(f) if !matches!(f, Field::Index(_))) {
        return Err(format!("filter={v}: counters cannot be filtered on"));
    }
    let test = if contains {
        Test::Contains(pattern.to_string())
    } else {
        let rx = regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
            .size_limit(REGEX_SIZE)
            .build()
            .map_err(|e| {
                let msg = e.to_string();
                let last = msg
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("invalid")
                    .trim()
                    .trim_start_matches("error: ")
                    .to_string();
                format!("filter={v}: not a regular expression this server reads: {last}")
            })?;
        Test::Regex(rx)
    };
    Ok(Filter {
        invert,
        field,
        test,
    })
}

fn collapse(v: &str) -> Result<Collapse, String> {
    let (name, chars) = match v.split_once(':') {
        Some((name, n)) => {
            let n = n
                .trim()
                .parse::<usize>()
                .map_err(|_| bad("collapse", v, "field or field:N (N a number of characters)"))?;
            (name, (n > 0).then_some(n))
        }
        None => (v, None),
    };
    let field = Field::named(name).ok_or_else(|| unknown_field("collapse", name))?;
    if !matches!(field, Field::Index(_)) {
        return Err(format!("collapse={v}: counters cannot be collapsed on"));
    }
    Ok(Collapse { field, chars })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_documented_parameter() {
        let p = Params::parse(
            "url=archive.org%2F*&output=json&fl=timestamp,mimetype&from=2010&to=2011\
             &filter=!statuscode:200&filter=~original:about&collapse=timestamp:10\
             &collapse=digest&limit=-5&offset=3&fastLatest=true&showResumeKey=true\
             &resumeKey=abc&page=2&pageSize=1&showDupeCount=true&showSkipCount=true\
             &lastSkipTimestamp=true&gzip=false",
        )
        .unwrap();
        assert_eq!(p.url, "archive.org/*");
        assert!(p.json && p.fast_latest && p.show_resume_key && p.show_dupe_count);
        assert_eq!(p.fields, Some(vec![Field::Index(1), Field::Index(3)]));
        assert_eq!(
            (p.from.as_deref(), p.to.as_deref()),
            (Some("2010"), Some("2011"))
        );
        assert_eq!(p.filters.len(), 2);
        assert!(!p.filters[0].accepts("200") && p.filters[0].accepts("404"));
        assert!(p.filters[1].accepts("http://x/about/") && !p.filters[1].accepts("x"));
        assert_eq!(
            p.collapses,
            vec![
                Collapse {
                    field: Field::Index(1),
                    chars: Some(10)
                },
                Collapse {
                    field: Field::Index(5),
                    chars: None
                }
            ]
        );
        assert_eq!((p.limit, p.offset, p.page, p.page_size), (-5, 3, 2, 1));
        assert_eq!(p.resume_key.as_deref(), Some("abc"));
        assert_eq!(p.gzip, Some(false));
    }

    #[test]
    fn a_filter_matches_the_whole_value() {
        let p = Params::parse("url=a&filter=mimetype:text/.*&filter=statuscode:2").unwrap();
        assert!(p.filters[0].accepts("text/html"));
        assert!(!p.filters[0].accepts("xtext/html"));
        assert!(!p.filters[1].accepts("200"));
        assert!(p.filters[1].accepts("2"));
    }

    #[test]
    fn bad_parameters_are_named() {
        for (q, word) in [
            ("", "url"),
            ("url=a&limit=x", "limit"),
            ("url=a&matchType=all", "matchType"),
            ("url=a&filter=statuscode:(", "filter"),
            ("url=a&filter=nosuch:1", "nosuch"),
            ("url=a&collapse=timestamp:x", "collapse"),
            ("url=a&fl=bogus", "bogus"),
            ("url=a&from=2010x", "from"),
            ("url=a&output=xml", "output"),
            ("url=a&offset=-1", "offset"),
            ("url=a&sort=closest", "closest"),
            ("url=a&showResumeKey=maybe", "showResumeKey"),
            ("url=a&filter=original:(a)\\1", "filter"),
        ] {
            let e = Params::parse(q).unwrap_err();
            assert!(e.contains(word), "{q}: {e}");
        }
    }

    #[test]
    fn default_fields_are_ia_public_ones_then_counters() {
        let p = Params::parse("url=a&showDupeCount=true&lastSkipTimestamp=1").unwrap();
        let names: Vec<_> = p.fields().iter().map(|f| f.name()).collect();
        assert_eq!(
            names,
            [
                "urlkey",
                "timestamp",
                "original",
                "mimetype",
                "statuscode",
                "digest",
                "length",
                "dupecount",
                "skipcount",
                "endtimestamp"
            ]
        );
    }
}

//! Digest files (`ukvs index --digests`, `ukvs digests`): every capture of
//! an index keyed by its payload digest, and the lookups that read them
//! (captures of a payload at any URL, the original of a revisit).
//!
//! | type / function | role |
//! |---|---|
//! | [`Builder`] | index lines in (any profile: UKVS, CDXJ, CDX), digest lines out, sorted by `sorted::ExternalSorter` and written whole through `ukvs::Writer` |
//! | [`from_chunks`] | the digest file of an index as it is written (`ukvs index --digests`, one of the index's taps) |
//! | [`ConvertJob`] | the digest file of existing indexes (`ukvs digests`): the same lines, so the same bytes |
//! | [`captures`] | one digest's captures, oldest first, in bounded memory |
//! | [`Originals`] | the original of a revisit: by its `WARC-Refers-To-Target-URI` and date in the index, else by digest in a digest file |
//! | [`Resolver`] | pywb's `resolveRevisits` over a lookup's lines, with [`Originals`] for revisits whose original is not among them |
//!
//! A digest file is sorted by digest, then SURT and datetime (its
//! `!fields`); the captures of one digest are few next to the file, so
//! [`captures`] reorders them by datetime, spilling past 8 MiB.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::Kind;
use super::live::Delta;
use super::lookup::{value_names_in, Collection};
use super::output::Output;
use crate::digest::{or_dash, Digest, Entry, IndexRecord};
use crate::sorted::{datetime_to_secs, ExternalSorter, KeyRange, MatchType, Upper};

/// Why a digest file was not made, or a digest's captures or a
/// revisit's original not found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An index or digest file cannot be opened or searched (the file
    /// is named).
    #[error(transparent)]
    Source(#[from] super::lookup::Error),
    /// A source's lines broke off (damage found while reading on).
    #[error(transparent)]
    Read(#[from] crate::sorted::Error),
    /// The delta's store failed (the store's file is named).
    #[error(transparent)]
    Delta(#[from] super::live::Error),
    /// Lines cannot be sorted (`what` says which step): see the cause;
    /// a temporary directory elsewhere (`--tmp-dir`) may have room.
    #[error("{what}")]
    Sort {
        what: &'static str,
        #[source]
        cause: io::Error,
    },
    /// The digest file cannot be written.
    #[error("cannot write {}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        cause: crate::ukvs::Error,
    },
    /// The index being written stopped before its end (its own error
    /// says why).
    #[error("the index was not finished: no digest file written")]
    Unfinished,
    /// The digest file cannot be created or put in place.
    #[error(transparent)]
    Output(#[from] io::Error),
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Source(e) => e.kind(),
            Error::Read(e) => Kind::of_sorted(e),
            // The delta's store is a local one.
            Error::Delta(_) | Error::Unfinished => Kind::Io,
            Error::Sort { cause, .. } | Error::Output(cause) => Kind::of_io(cause),
            Error::Write { cause, .. } => Kind::in_chain(cause).unwrap_or(Kind::Io),
        }
    }

    fn sort(what: &'static str) -> impl FnOnce(io::Error) -> Error {
        move |cause| Error::Sort { what, cause }
    }
}

/// Where a digest file goes, and the sort's budget.
#[derive(Clone, Debug)]
pub struct DigestOutput {
    pub path: PathBuf,
    /// Memory for sorting before runs spill to `tmp_dir`, in bytes.
    pub mem: u64,
    pub tmp_dir: Option<PathBuf>,
}

/// What a digest file was made of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Index lines read.
    pub captures: u64,
    /// Digest-file lines written (a capture with a second, stated digest
    /// gives two).
    pub lines: u64,
    /// Index lines without a digest (`-`), or whose line could not be read.
    pub without: u64,
    /// Digests in no spelling [`Digest::parse`] reads.
    pub unreadable: u64,
}

/// Index lines in, a sorted digest file out.
pub struct Builder {
    sorter: ExternalSorter,
    buf: Vec<u8>,
    summary: Summary,
}

/// The value fields of a line whose index names none, judged as pywb
/// judges a line: a JSON block after the datetime is CDXJ; a JSON block
/// further on is the `ukvs` profile's (`offset digest`); 11 and 9
/// columns are pywb's CDX formats (`N b a m s k r M S V g`, `N b a m s k
/// r V g`); anything else is read as the `ukvs` profile's.
pub fn guessed_names(line: &[u8]) -> Vec<String> {
    let fields = || line.split(|&b| b == b' ').filter(|f| !f.is_empty());
    let cdxj = fields().nth(2).is_some_and(|f| f.starts_with(b"{"));
    // A JSON block later on is a UKVS line's (whose JSON may hold spaces,
    // so its fields are not counted).
    let ukvs = memchr::memmem::find(line, b" {").is_some();
    let letters: &[u8] = match fields().count() {
        _ if cdxj => b"",
        _ if ukvs => return vec!["offset".into(), "digest".into()],
        11 => b"amskrMSVg",
        9 => b"amskrVg",
        _ => return vec!["offset".into(), "digest".into()],
    };
    letters
        .iter()
        .map(|&c| crate::ukvs::convert::cdx_column_name(c))
        .collect()
}

impl Builder {
    pub fn new(out: &DigestOutput) -> Builder {
        Builder {
            sorter: ExternalSorter::new(
                usize::try_from(out.mem).unwrap_or(usize::MAX),
                out.tmp_dir.clone(),
            ),
            buf: Vec::new(),
            summary: Summary::default(),
        }
    }

    /// Takes one data line of an index whose value fields are `names`
    /// (`None`: its headers name none, as a ZipNum cluster's, so the line
    /// says: see [`guessed_names`]).
    pub fn push(&mut self, line: &[u8], names: Option<&[String]>) -> Result<(), Error> {
        self.summary.captures += 1;
        let guessed;
        let names = match names {
            Some(n) => n,
            None => {
                guessed = guessed_names(line);
                &guessed
            }
        };
        let Some(rec) = IndexRecord::parse(line, names) else {
            self.summary.without += 1;
            return Ok(());
        };
        self.buf.clear();
        self.summary.unreadable += rec.digest_lines(&mut self.buf) as u64;
        if self.buf.is_empty() {
            self.summary.without += 1;
        }
        for l in self.buf.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            self.summary.lines += 1;
            self.sorter
                .push(l)
                .map_err(Error::sort("cannot sort digest lines"))?;
        }
        Ok(())
    }

    /// Writes the file whole (under a temporary name, renamed at the end).
    pub fn finish(self, path: &Path) -> Result<Summary, Error> {
        let dest = Output::create(path)?.durable();
        let mut wtr = crate::ukvs::Writer::new(dest);
        let failed = |cause| Error::Write {
            path: path.to_path_buf(),
            cause,
        };
        for h in crate::digest::header_lines() {
            wtr.raw_header(&h).map_err(failed)?;
        }
        let sorted = self.sorter.finish();
        for line in sorted.map_err(Error::sort("cannot sort digest lines"))? {
            let line = line.map_err(Error::sort("cannot read back sorted digest lines"))?;
            wtr.write_line(&line).map_err(failed)?;
        }
        wtr.finish().map_err(failed)?.commit()?;
        Ok(self.summary)
    }
}

/// The digest file of an index made from its lines as they are written:
/// `headers` are the index's header lines (they name its value fields),
/// then chunks of lines each ending in `\n`; an empty chunk says the index
/// is complete, and only then is the file written.
pub fn from_chunks(
    out: &DigestOutput,
    headers: &[Vec<u8>],
    chunks: impl Iterator<Item = Arc<Vec<u8>>>,
) -> Result<Summary, Error> {
    let names = value_names_in(headers.iter().map(Vec::as_slice));
    let mut b = Builder::new(out);
    for chunk in chunks {
        if chunk.is_empty() {
            return b.finish(&out.path);
        }
        for line in chunk.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            b.push(line, names.as_deref())?;
        }
    }
    Err(Error::Unfinished)
}

/// `ukvs digests`: the digest file of existing indexes.
#[derive(Clone, Debug)]
pub struct ConvertJob {
    /// Sorted index files, directories of them, ZipNum clusters.
    pub inputs: Vec<PathBuf>,
    pub output: DigestOutput,
    pub no_mmap: bool,
}

impl ConvertJob {
    pub fn run(&self) -> Result<Summary, Error> {
        let coll = Collection::open(&self.inputs, self.no_mmap)?;
        let names: Vec<Option<Vec<String>>> = coll
            .sources()
            .iter()
            .map(|s| value_names_in(s.headers()))
            .collect();
        let all = KeyRange {
            start: Vec::new(),
            upper: Upper::Unbounded,
        };
        let mut b = Builder::new(&self.output);
        for hit in coll.lines(&all, |_| None)? {
            let hit = hit?;
            b.push(&hit.line, names[hit.source].as_deref())?;
        }
        b.finish(&self.output.path)
    }
}

/// Memory one digest's captures are reordered in before they spill.
const ORDER_MEM: usize = 8 << 20;

/// Every capture of `digest` in the digest files `digests`, oldest first
/// (equal datetimes in byte order), as digest-file lines. Holds at most
/// 8 MiB; more goes to temporary files.
pub fn captures(
    digests: &Collection,
    digest: &Digest,
) -> Result<impl Iterator<Item = Result<Vec<u8>, Error>>, Error> {
    captures_with(Some(digests), None, None, digest)
}

/// One digest's captures in a collection, oldest first. Without a
/// delta: the lines of its digest files. For a live collection, those
/// lines and the delta's digest keys ([`Delta::digest_ids`]) only name
/// captures, each taken once: its newest entry in the delta, else its
/// line in `bases` (the collection's bases and their value names), is
/// what it holds, found by the digest when it has that digest (so that
/// a capture deleted or replaced, in the delta or by a fold, is found as
/// it is now).
pub fn captures_with(
    digests: Option<&Collection>,
    delta: Option<&Delta>,
    bases: Option<(&Collection, &[String])>,
    digest: &Digest,
) -> Result<impl Iterator<Item = Result<Vec<u8>, Error>>, Error> {
    let key = digest.canonical();
    let range = KeyRange::new(key.as_bytes(), MatchType::Exact);
    let mut sorter = ExternalSorter::new(ORDER_MEM, None);
    let mut keyed = Vec::new();
    // `digest surt datetime ...`: the datetime first, then the line.
    let mut push = |line: &[u8]| {
        let datetime = line.split(|&b| b == b' ').nth(2).unwrap_or(b"-");
        keyed.clear();
        keyed.extend_from_slice(datetime);
        keyed.push(b' ');
        keyed.extend_from_slice(line);
        sorter
            .push(&keyed)
            .map_err(Error::sort("cannot order captures"))
    };
    // Capture ids, with the digest-file lines that named each (a file
    // may hold copies of a line).
    let mut ids: std::collections::BTreeMap<Vec<u8>, Vec<Vec<u8>>> = Default::default();
    if let Some(digests) = digests {
        for hit in digests.lines(&range, |_| None)? {
            let hit = hit?;
            match delta {
                None => push(&hit.line)?,
                Some(_) => {
                    if let Some(id) = entry_id(&hit.line) {
                        ids.entry(id).or_default().push(hit.line.into_owned());
                    }
                }
            }
        }
    }
    if let Some(delta) = delta {
        for id in delta.digest_ids(digest)? {
            ids.entry(id).or_default();
        }
        let mut buf = Vec::new();
        for (id, filed) in ids {
            let (line, names) = match delta.newest(&id)? {
                Some(None) => continue,
                Some(Some(line)) => {
                    let names = delta_names(&line);
                    (line, names)
                }
                None => match bases {
                    Some((index, names)) => match base_line(index, names, &id)? {
                        // A UKVS line's values are named by its file; a
                        // CDX or CDXJ line says its own (a fold of CDX
                        // lines alone writes them to a `.cdxj` file).
                        Some(line) if is_ukvs(&line) => (line, names.to_vec()),
                        Some(line) => {
                            let names = delta_names(&line);
                            (line, names)
                        }
                        None => continue,
                    },
                    // No bases given (a command given only the digest
                    // files of the collection's files): a digest file's
                    // line the delta leaves alone is taken as it is.
                    None => {
                        for line in &filed {
                            push(line)?;
                        }
                        continue;
                    }
                },
            };
            let Some(rec) = IndexRecord::parse(&line, &names) else {
                continue;
            };
            buf.clear();
            rec.digest_lines(&mut buf);
            for l in buf.split(|&b| b == b'\n') {
                if l.strip_prefix(key.as_bytes())
                    .is_some_and(|rest| rest.first() == Some(&b' '))
                {
                    push(l)?;
                }
            }
        }
    }
    let sorted = sorter
        .finish()
        .map_err(Error::sort("cannot order captures"))?;
    Ok(sorted.map(|line| {
        let line = line.map_err(Error::sort("cannot read back ordered captures"))?;
        let at = memchr::memchr(b' ', &line).map_or(0, |i| i + 1);
        Ok(line[at..].to_vec())
    }))
}

/// An index searched by key for the originals of revisits: files, or a
/// live collection ([`Merged`](super::merged::Merged)).
pub trait ByKey {
    /// The lines of `range` (one URL's captures), in index order.
    fn key_lines(&self, range: &KeyRange) -> Result<Vec<Vec<u8>>, Error>;
}

impl ByKey for Collection {
    fn key_lines(&self, range: &KeyRange) -> Result<Vec<Vec<u8>>, Error> {
        let mut out = Vec::new();
        for hit in self.lines(range, |_| None)? {
            out.push(hit?.line.into_owned());
        }
        Ok(out)
    }
}

/// The value fields of a delta's line: [`guessed_names`], and pywb's
/// 10-column CDX (`N b a m s k r M V g`), which a POST takes too.
fn delta_names(line: &[u8]) -> Vec<String> {
    let plain = memchr::memchr(b'{', line).is_none();
    if plain && memchr::memchr_iter(b' ', line).count() == 9 {
        return b"amskrMVg"
            .iter()
            .map(|&c| crate::ukvs::convert::cdx_column_name(c))
            .collect();
    }
    guessed_names(line)
}

/// Whether a line is a UKVS capture line: a JSON block after values.
fn is_ukvs(line: &[u8]) -> bool {
    let cdxj = line
        .split(|&b| b == b' ')
        .nth(2)
        .is_some_and(|f| f.starts_with(b"{"));
    !cdxj && memchr::memmem::find(line, b" {").is_some()
}

/// The capture id of a digest-file line (its key, datetime, filename
/// and offset).
fn entry_id(line: &[u8]) -> Option<Vec<u8>> {
    let entry = Entry::parse(line)?;
    let r = &entry.record;
    let field = |v: &Option<String>| v.as_deref().unwrap_or("-").as_bytes().to_vec();
    Some(super::live::capture_id(
        &field(&r.surt),
        &field(&r.datetime),
        &field(&r.filename),
        &field(&r.offset),
    ))
}

/// The line of the capture `id` in `index` (whose value fields are
/// `names`), if it holds one.
fn base_line(index: &Collection, names: &[String], id: &[u8]) -> Result<Option<Vec<u8>>, Error> {
    let key = &id[..memchr::memchr(b' ', id).unwrap_or(id.len())];
    let range = KeyRange::new(key, MatchType::Exact);
    for hit in index.lines(&range, |_| None)? {
        let hit = hit?;
        if crate::ukvs::post::line_id(&hit.line, names).as_deref() == Some(id) {
            return Ok(Some(hit.line.to_vec()));
        }
    }
    Ok(None)
}

/// Finds the originals of revisits: by the URL and date a revisit refers
/// to, in the index; else by its digest, in a digest file.
pub struct Originals<'a> {
    /// The index, searched by URL (none: only by digest).
    pub index: Option<&'a dyn ByKey>,
    pub value_names: Vec<String>,
    pub surt: crate::surt::Options,
    /// Digest files, searched by digest.
    pub digests: Option<&'a Collection>,
}

/// 14 digits of a `WARC-Refers-To-Date` (or a datetime already so).
fn datetime_14(date: &str) -> Option<String> {
    let b = date.as_bytes();
    if b.len() == 14 && b.iter().all(u8::is_ascii_digit) {
        return Some(date.to_string());
    }
    crate::capture::datetime::warc_date(b).map(|(d, _)| String::from_utf8_lossy(&d).into_owned())
}

/// Of `candidates` (datetime, record), the nearest in time to `target`,
/// the earlier of two as near.
fn nearest(
    candidates: impl Iterator<Item = IndexRecord>,
    target: Option<&str>,
) -> Option<IndexRecord> {
    let target = target.map(|t| datetime_to_secs(t.as_bytes()));
    let mut best: Option<(i64, i64, IndexRecord)> = None;
    for rec in candidates {
        let at = datetime_to_secs(rec.datetime.as_deref().unwrap_or("").as_bytes());
        let d = target.map_or(0, |t| (at - t).abs());
        if best
            .as_ref()
            .map_or(true, |(bd, bat, _)| (d, at) < (*bd, *bat))
        {
            best = Some((d, at, rec));
        }
    }
    best.map(|(_, _, r)| r)
}

impl Originals<'_> {
    /// Whether the revisit names its own URL as the one it refers to (its
    /// original is then resolved as pywb resolves it, from the answer
    /// alone).
    pub fn refers_to_itself(&self, rev: &IndexRecord) -> bool {
        match (&rev.refers_to_uri, &rev.surt) {
            (Some(uri), Some(key)) => {
                crate::surt::key(uri.as_bytes(), &self.surt).0 == key.as_bytes()
            }
            _ => false,
        }
    }

    /// The original capture of the revisit `rev`, if one is found: a
    /// capture that is no revisit, with the same payload digest (when
    /// the revisit gives one), at the refers-to URL nearest the
    /// refers-to date; else, through the digest files, the capture of that
    /// digest nearest the revisit's own datetime.
    pub fn find(&self, rev: &IndexRecord) -> Result<Option<IndexRecord>, Error> {
        // A stated digest of another algorithm is the payload's own; the
        // `digest` field of such a revisit (the `ukvs` profile's) is the
        // SHA-1 of its empty payload.
        let digest = rev
            .payload_digest
            .as_deref()
            .or(rev.digest.as_deref())
            .and_then(|d| Digest::parse(d).ok());
        if let (Some(index), Some(uri)) = (self.index, rev.refers_to_uri.as_deref()) {
            let key = crate::surt::key(uri.as_bytes(), &self.surt).0;
            let range = KeyRange::new(&key, MatchType::Exact);
            let mut found = Vec::new();
            for line in index.key_lines(&range)? {
                let Some(rec) = IndexRecord::parse(&line, &self.value_names) else {
                    continue;
                };
                let same = match &digest {
                    Some(want) => rec.digests().0.contains(want),
                    None => true,
                };
                if same && !rec.is_revisit() && rec.filename.is_some() {
                    found.push(rec);
                }
            }
            let when = rev
                .refers_to_date
                .as_deref()
                .and_then(datetime_14)
                .or_else(|| rev.datetime.clone());
            if let Some(rec) = nearest(found.into_iter(), when.as_deref()) {
                return Ok(Some(rec));
            }
        }
        let (Some(digests), Some(digest)) = (self.digests, digest) else {
            return Ok(None);
        };
        let range = KeyRange::new(digest.canonical().as_bytes(), MatchType::Exact);
        let mut found = Vec::new();
        for hit in digests.lines(&range, |_| None)? {
            let hit = hit?;
            if let Some(e) = Entry::parse(&hit.line) {
                if !e.record.is_revisit() && e.record.filename.is_some() {
                    found.push(e.record);
                }
            }
        }
        Ok(nearest(found.into_iter(), rev.datetime.as_deref()))
    }
}

/// pywb's `resolveRevisits` for a lookup: a revisit gets the
/// `orig.length`, `orig.offset` and `orig.filename` of the first capture
/// with the same digest that is no revisit and comes before it in index
/// order within the query's range (pywb resolves before it filters,
/// orders or limits, so [`Resolver::scan`] reads the whole range first),
/// else of the original [`Originals`] finds; other lines get `-`.
pub struct Resolver<'a> {
    pub originals: Originals<'a>,
    /// Per digest as written, the first capture of the range that is no
    /// revisit: its line and what it says.
    first: HashMap<String, (Vec<u8>, IndexRecord)>,
}

impl<'a> Resolver<'a> {
    pub fn new(originals: Originals<'a>) -> Resolver<'a> {
        Resolver {
            originals,
            first: HashMap::new(),
        }
    }

    /// Reads the query's range in index order (memory: one capture per
    /// distinct digest, as pywb holds).
    pub fn scan<'l>(
        &mut self,
        lines: impl Iterator<Item = Result<super::lookup::Hit<'l>, super::lookup::Error>>,
    ) -> Result<(), Error> {
        self.scan_lines(lines.map(|h| h.map(|h| h.line)))
    }

    /// [`Resolver::scan`] of lines (a live collection's).
    pub fn scan_lines<'l, E>(
        &mut self,
        lines: impl Iterator<Item = Result<std::borrow::Cow<'l, [u8]>, E>>,
    ) -> Result<(), Error>
    where
        Error: From<E>,
    {
        for line in lines {
            let line = line?;
            let Some(rec) = IndexRecord::parse(&line, &self.originals.value_names) else {
                continue;
            };
            if rec.is_revisit() || rec.filename.is_none() {
                continue;
            }
            if let Some(d) = &rec.digest {
                if !self.first.contains_key(d) {
                    self.first.insert(d.clone(), (line.to_vec(), rec));
                }
            }
        }
        Ok(())
    }

    /// `line` with the three `orig.*` members added to its JSON block (or
    /// a JSON block of them appended).
    pub fn line(&mut self, line: &[u8]) -> Result<Vec<u8>, Error> {
        let Some(rec) = IndexRecord::parse(line, &self.originals.value_names) else {
            return Ok(line.to_vec());
        };
        let mut original = None;
        if rec.is_revisit() || rec.filename.is_none() {
            original = rec
                .digest
                .as_ref()
                .and_then(|d| self.first.get(d))
                .filter(|(first, _)| first.as_slice() < line)
                .map(|(_, r)| r.clone());
            if original.is_none() && rec.is_revisit() && !self.originals.refers_to_itself(&rec) {
                original = self.originals.find(&rec)?;
            }
        }
        let members: Vec<(&str, String)> = match &original {
            Some(o) => vec![
                ("orig.length", or_dash(&o.length).into_owned()),
                ("orig.offset", or_dash(&o.offset).into_owned()),
                ("orig.filename", or_dash(&o.filename).into_owned()),
            ],
            None => ["orig.length", "orig.offset", "orig.filename"]
                .into_iter()
                .map(|n| (n, "-".to_string()))
                .collect(),
        };
        Ok(with_members(line, &members))
    }
}

/// `line` with string members added at the end of its JSON block, in the
/// block's own spacing (cdxj-indexer's `", "` or compact), or a JSON
/// block of them appended when it has none.
fn with_members(line: &[u8], members: &[(&str, String)]) -> Vec<u8> {
    let spaced = line.windows(3).any(|w| w == b"\": ");
    let (comma, colon) = if spaced { (", ", ": ") } else { (",", ":") };
    let mut add = String::new();
    for (name, value) in members {
        if !add.is_empty() {
            add.push_str(comma);
        }
        add.push_str(&serde_json::Value::from(*name).to_string());
        add.push_str(colon);
        add.push_str(&serde_json::Value::from(value.as_str()).to_string());
    }
    let trimmed = line.trim_ascii_end();
    let has_block = trimmed.ends_with(b"}") && memchr::memmem::find(trimmed, b" {").is_some();
    let mut out = Vec::with_capacity(line.len() + add.len() + 4);
    if has_block {
        let body = &trimmed[..trimmed.len() - 1];
        out.extend_from_slice(body);
        if !body.trim_ascii_end().ends_with(b"{") {
            out.extend_from_slice(comma.as_bytes());
        }
        out.extend_from_slice(add.as_bytes());
        out.push(b'}');
    } else {
        out.extend_from_slice(trimmed);
        out.extend_from_slice(b" {");
        out.extend_from_slice(add.as_bytes());
        out.push(b'}');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_their_kind_and_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let output = DigestOutput {
            path: dir.path().join("out.digests"),
            mem: 1 << 20,
            tmp_dir: None,
        };
        let job = |inputs: Vec<PathBuf>| ConvertJob {
            inputs,
            output: output.clone(),
            no_mmap: false,
        };
        let absent = dir.path().join("absent.cdxj");
        let err = job(vec![absent.clone()]).run().unwrap_err();
        assert_eq!(err.kind(), Kind::Missing, "{err:?}");
        assert!(
            err.to_string().contains(&*absent.to_string_lossy()),
            "{err}"
        );
        let cut = crate::engine::error::fixtures::cut_gzip_index(dir.path());
        let err = job(vec![cut]).run().unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput, "{err:?}");
        assert!(err.to_string().contains("is gzip-compressed"), "{err}");
        // An index that stops before its end writes nothing.
        let line = Arc::new(b"a)/ 20200101000000 {\"digest\": \"sha1:AAAA\"}\n".to_vec());
        let err = from_chunks(&output, &[], std::iter::once(line)).unwrap_err();
        assert_eq!(err.kind(), Kind::Io);
        assert_eq!(
            err.to_string(),
            "the index was not finished: no digest file written"
        );
        assert!(!output.path.exists());
    }

    #[test]
    fn members_go_into_the_json_block_in_its_spacing() {
        let m = [("orig.offset", "12".to_string())];
        assert_eq!(
            with_members(b"a)/ 2020 {\"url\": \"x\"}", &m),
            b"a)/ 2020 {\"url\": \"x\", \"orig.offset\": \"12\"}"
        );
        assert_eq!(
            with_members(b"a)/ 2020 1 sha1:X {\"url\":\"x\"}", &m),
            b"a)/ 2020 1 sha1:X {\"url\":\"x\",\"orig.offset\":\"12\"}"
        );
        assert_eq!(
            with_members(b"a)/ 2020 1 sha1:X", &m),
            b"a)/ 2020 1 sha1:X {\"orig.offset\":\"12\"}"
        );
        assert_eq!(
            with_members(b"a)/ 2020 {}", &m),
            b"a)/ 2020 {\"orig.offset\":\"12\"}"
        );
    }

    #[test]
    fn lines_without_headers_are_read_by_their_shape() {
        assert!(guessed_names(b"a)/ 2020 {\"url\": \"x y z a b c d e f\"}").is_empty());
        let ukvs = b"a)/ 2020 12 sha1:X {\"url\":\"x\",\"redirect\":\"a b c d e f g h\"}";
        assert_eq!(guessed_names(ukvs), ["offset", "digest"]);
        let cdx = b"a)/ 2020 http://a/ text/html 200 X - - 10 12 f.warc.gz";
        assert_eq!(guessed_names(cdx)[3], "digest");
        assert_eq!(guessed_names(cdx).len(), 9);
    }

    #[test]
    fn nearest_prefers_the_earlier_of_two_as_near() {
        let rec = |dt: &str| IndexRecord {
            datetime: Some(dt.into()),
            ..IndexRecord::default()
        };
        let got = nearest(
            [
                rec("20200101000010"),
                rec("20200101000000"),
                rec("20200101000005"),
            ]
            .into_iter(),
            Some("20200101000003"),
        )
        .unwrap();
        assert_eq!(got.datetime.as_deref(), Some("20200101000005"));
        let got = nearest(
            [rec("20200101000006"), rec("20200101000000")].into_iter(),
            Some("20200101000003"),
        )
        .unwrap();
        assert_eq!(got.datetime.as_deref(), Some("20200101000000"));
    }
}

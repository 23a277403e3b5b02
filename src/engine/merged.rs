//! What a live collection holds: its bases (sorted files, directories,
//! ZipNum clusters) plus its delta, less the captures the delta hides.
//! The server and the offline tools read a collection through here, so
//! that they see the same lines.
//!
//! ```text
//! base lines (each source) ─► less the tombstones of the range (Hider)
//!            │                           ┐
//!            ▼                           │ one sorted file given alone:
//! delta lines (Delta::lines) ────────────┘ merged into its lines in byte
//!                                          order; otherwise one more source
//! ```
//!
//! A tombstone names a capture (`key datetime\0filename\0offset`, see
//! [`crate::ukvs::post::line_id`]); a base line whose capture it names is
//! left out, whatever the line's other fields. The delta's own lines are
//! never hidden: a delete removes them from the store itself.
//!
//! [`Merged`] is a borrowed view (the server keeps its bases and delta
//! behind `Arc`s); [`Live`] owns both, for a command that opens a
//! collection for one run.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use super::live::{Delta, Hider};
use super::lookup::{Collection, MergeBy, Source, SourceLines};
use crate::sorted::KeyRange;

/// A line of a merged read that could not be had: a base's search, or
/// the delta's store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A base could not be opened or searched (the file is named).
    #[error(transparent)]
    Index(#[from] super::lookup::Error),
    /// A base's lines broke off (damage found while reading on).
    #[error(transparent)]
    Read(#[from] crate::sorted::Error),
    /// The delta's store failed (the store's file is named).
    #[error(transparent)]
    Delta(#[from] super::live::Error),
}

/// A merged read's failure as the digest jobs give it (they sit below
/// this module: a collection's lines reach them through [`Merged`]).
impl From<Error> for super::digests::Error {
    fn from(e: Error) -> super::digests::Error {
        match e {
            Error::Index(e) => e.into(),
            Error::Read(e) => e.into(),
            Error::Delta(e) => e.into(),
        }
    }
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> super::error::Kind {
        match self {
            Error::Index(e) => e.kind(),
            Error::Read(e) => super::error::Kind::of_sorted(e),
            // The delta's store is a local one.
            Error::Delta(_) => super::error::Kind::Io,
        }
    }
}

/// Lines of one source, or of a base and the delta merged, in byte order.
pub type Lines<'a> = Box<dyn Iterator<Item = Result<Cow<'a, [u8]>, Error>> + Send + 'a>;

/// The lines of an answer, ordered as asked ([`Merged::answer`]).
pub type Answer<'a> = Box<dyn Iterator<Item = Result<Cow<'a, [u8]>, Error>> + 'a>;

/// A collection's bases and delta, read as one.
#[derive(Clone, Copy)]
pub struct Merged<'a> {
    bases: Option<&'a Collection>,
    delta: Option<&'a Delta>,
    value_names: &'a [String],
    /// The delta's lines go into the lone base's (see [`Merged::new`]).
    within: bool,
}

impl<'a> Merged<'a> {
    /// A view of `bases` and `delta`. `lone_file` says the bases are one
    /// sorted file given by itself (not a file of a directory): the
    /// delta's lines are then merged into that file's lines in byte
    /// order, so that the collection answers byte for byte as the file
    /// would with the lines added and deleted. Otherwise the delta is one
    /// more source beside the others. `value_names` names the value
    /// columns of the bases' lines (to find a line's capture id).
    pub fn new(
        bases: Option<&'a Collection>,
        delta: Option<&'a Delta>,
        value_names: &'a [String],
        lone_file: bool,
    ) -> Merged<'a> {
        let sources = bases.map_or(&[][..], |b| b.sources());
        let within = delta.is_some() && lone_file && sources.len() == 1 && !sources[0].is_cluster();
        Merged {
            bases,
            delta,
            value_names,
            within,
        }
    }

    /// The bases' sources (none for a delta alone).
    pub fn sources(&self) -> &'a [Source] {
        self.bases.map_or(&[], |b| b.sources())
    }

    /// Whether there is anything to read at all.
    pub fn is_empty(&self) -> bool {
        self.bases.is_none() && self.delta.is_none()
    }

    /// Whether a delta is part of the read.
    pub fn is_live(&self) -> bool {
        self.delta.is_some()
    }

    /// Whether the delta's lines merge into the lone base's lines
    /// ([`Merged::source_lines`]) rather than being a source of their own.
    pub fn delta_within(&self) -> bool {
        self.within
    }

    /// The tombstones of `range`, `None` when nothing there is hidden
    /// (or there are no bases to hide lines of). It holds the delta's
    /// lines of the range too ([`Merged::delta_lines_of`]).
    pub fn hider(&self, range: &KeyRange) -> Result<Option<Arc<Hider>>, Error> {
        match self.delta {
            Some(_) if self.bases.is_none() => Ok(None),
            Some(d) => {
                let h = d.hider(range)?;
                Ok((!h.is_empty()).then(|| Arc::new(h)))
            }
            None => Ok(None),
        }
    }

    /// A base's lines less those whose capture `hider` hides.
    pub fn unhidden<E>(
        &self,
        lines: impl Iterator<Item = Result<Cow<'a, [u8]>, E>> + Send + 'a,
        hider: Option<Arc<Hider>>,
    ) -> Lines<'a>
    where
        Error: From<E>,
    {
        let lines = lines.map(|l| l.map_err(Error::from));
        let Some(hider) = hider else {
            return Box::new(lines);
        };
        let names = self.value_names;
        Box::new(lines.filter_map(move |l| match l {
            Ok(line) => match crate::ukvs::post::line_id(&line, names).map(|id| hider.hides(&id)) {
                None | Some(Ok(false)) => Some(Ok(line)),
                Some(Ok(true)) => None,
                Some(Err(e)) => Some(Err(e.into())),
            },
            Err(e) => Some(Err(e)),
        }))
    }

    /// The delta's lines within `range` (none without a delta).
    pub fn delta_lines(&self, range: &KeyRange) -> Result<Lines<'a>, Error> {
        let Some(delta) = self.delta else {
            return Ok(Box::new(std::iter::empty()));
        };
        let lines = delta.lines(range)?;
        Ok(Box::new(
            lines.map(|l| l.map(Cow::Owned).map_err(Error::from)),
        ))
    }

    /// The delta's lines within `range` no greater than `at_most` (when
    /// given), last first, when there are at most `max` of them: the store
    /// reads forwards only, so they are read and held. `None` when there
    /// are more (a reader then reads the range forwards).
    pub fn delta_lines_rev(
        &self,
        range: &KeyRange,
        at_most: Option<&[u8]>,
        max: usize,
    ) -> Result<Option<Lines<'a>>, Error> {
        let Some(delta) = self.delta else {
            return Ok(Some(Box::new(std::iter::empty())));
        };
        let mut held = Vec::new();
        for line in delta.lines(range)? {
            let line = line?;
            if at_most.is_some_and(|m| &line[..] > m) {
                break;
            }
            if held.len() == max {
                return Ok(None);
            }
            held.push(line);
        }
        Ok(Some(Box::new(
            held.into_iter().rev().map(|l| Ok(Cow::Owned(l))),
        )))
    }

    /// The delta's lines within `range`, given the range's `hider`
    /// ([`Merged::hider`]): read from what it holds, so that the store
    /// is read once for both.
    pub fn delta_lines_of(
        &self,
        range: &KeyRange,
        hider: Option<&Arc<Hider>>,
    ) -> Result<Lines<'a>, Error> {
        if self.delta.is_none() {
            return Ok(Box::new(std::iter::empty()));
        }
        match hider {
            // Nothing held: no entry in the range, when there are bases.
            None if self.bases.is_some() => Ok(Box::new(std::iter::empty())),
            Some(h) => match h.lines() {
                Some(lines) => Ok(Box::new(
                    lines.map(|l| l.map(Cow::Owned).map_err(Error::from)),
                )),
                None => self.delta_lines(range),
            },
            None => self.delta_lines(range),
        }
    }

    /// One base's lines of `range` as the collection holds them: less
    /// what the delta hides, and with the delta's lines merged in when
    /// they belong within ([`Merged::delta_within`]).
    pub fn source_lines(
        &self,
        lines: SourceLines<'a>,
        hider: Option<Arc<Hider>>,
        range: &KeyRange,
    ) -> Result<Lines<'a>, Error> {
        let delta = if self.within {
            Some(self.delta_lines_of(range, hider.as_ref())?)
        } else {
            None
        };
        let lines = self.unhidden(lines, hider);
        let Some(delta) = delta else {
            return Ok(lines);
        };
        Ok(Box::new(
            MergeBy::new(vec![lines, delta], |a: &Cow<[u8]>, b| a < b)
                .map(|r| r.map(|(line, _)| line)),
        ))
    }

    /// Every line of `range`, bases and delta, in byte order (ties: the
    /// bases' first, in source order). Each plain file is read as pywb's
    /// server reads it ([`Source::lines_as_pywb`]), a cluster in full.
    pub fn lines(&self, range: &'a KeyRange) -> Result<Lines<'a>, Error> {
        let hider = self.hider(range)?;
        let delta = self.delta_lines_of(range, hider.as_ref())?;
        let bases: Lines<'a> = match self.bases {
            Some(b) => {
                let found = b
                    .lines_as_pywb(range)?
                    .map(|h| h.map(|h| h.line).map_err(Error::from));
                self.unhidden(found, hider)
            }
            None => Box::new(std::iter::empty()),
        };
        if self.delta.is_none() {
            return Ok(bases);
        }
        Ok(Box::new(
            MergeBy::new(vec![bases, delta], |a: &Cow<[u8]>, b| a < b)
                .map(|r| r.map(|(line, _)| line)),
        ))
    }
}

impl<'a> Merged<'a> {
    /// The answer to one query, as [`Collection::answer`] gives it for
    /// files: every line of `range` ([`Merged::lines`]) kept by the time
    /// filter and the access rules, then ordered and cut as asked.
    pub fn answer(
        &self,
        range: &'a KeyRange,
        filters: &'a super::lookup::Filters,
    ) -> Result<Answer<'a>, Error> {
        let found = self.lines(range)?.filter(move |l| match l {
            Ok(line) => {
                let (key, datetime) = crate::sorted::lines::key_datetime(line);
                (!filters.time.is_active() || filters.time.accepts(datetime))
                    && filters.acl.as_ref().map_or(true, |rules| {
                        rules.access(key, datetime) != crate::acl::Access::Exclude
                    })
            }
            Err(_) => true,
        });
        Ok(crate::sorted::ordered(
            found,
            &filters.order,
            filters.limit,
            |l| crate::sorted::lines::key_datetime(l).1,
        ))
    }
}

impl super::digests::ByKey for Merged<'_> {
    fn key_lines(&self, range: &KeyRange) -> Result<Vec<Vec<u8>>, super::digests::Error> {
        let mut out = Vec::new();
        for line in self.lines(range)? {
            out.push(line?.into_owned());
        }
        Ok(out)
    }
}

impl Merged<'_> {
    /// Every capture of `digest` in the collection, oldest first, as
    /// digest-file lines: those `digests` (the digest files of its bases)
    /// and the delta's digest keys name, each as the collection holds it
    /// now ([`digests::captures_with`](super::digests::captures_with)).
    pub fn captures(
        &self,
        digests: &Collection,
        digest: &crate::digest::Digest,
    ) -> Result<impl Iterator<Item = Result<Vec<u8>, super::digests::Error>>, super::digests::Error>
    {
        super::digests::captures_with(
            Some(digests),
            self.delta,
            self.bases.map(|b| (b, self.value_names)),
            digest,
        )
    }
}

/// The shape of a data line, to tell whether a collection's lines can
/// be written as one file: CDXJ, UKVS (values then JSON), or CDX by its
/// number of columns.
fn shape(line: &[u8]) -> usize {
    let mut parts = line.splitn(3, |&b| b == b' ');
    let (_, _, rest) = (parts.next(), parts.next(), parts.next());
    match rest {
        Some(r) if r.first() == Some(&b'{') => 0,
        _ if memchr::memmem::find(line, b" {").is_some() => 1,
        _ => 2 + line.iter().filter(|&&b| b == b' ').count(),
    }
}

/// A collection opened for one run: its bases and its delta, owned.
pub struct Live {
    pub bases: Option<Collection>,
    pub delta: Option<Delta>,
    pub value_names: Vec<String>,
    lone_file: bool,
}

impl Live {
    /// Opens the bases at `paths` (any kind [`Collection::open`] takes;
    /// none for a delta alone) and the delta in `data` (a collection's
    /// directory of a server's `--data`, which must hold a store). A
    /// store a running server holds cannot be opened: the error says so.
    pub fn open<P: AsRef<Path>>(
        paths: &[P],
        data: Option<&Path>,
        no_mmap: bool,
    ) -> anyhow::Result<Live> {
        use anyhow::Context;
        let delta = match data {
            None => None,
            Some(dir) => {
                if !super::live::is_delta_dir(dir) {
                    anyhow::bail!(
                        "{} holds no live collection: give the directory of one \
                         collection under a server's --data (DIR/NAME)",
                        dir.display()
                    );
                }
                // Read for one job: no compactions.
                let settings = super::live::Settings::one_job();
                Some(Delta::open_with(dir, settings).with_context(|| {
                    format!(
                        "cannot open the live collection {} (is a server running on it? \
                         stop it, or ask the server)",
                        dir.display()
                    )
                })?)
            }
        };
        // A fold records the base it wrote in place of the paths it
        // folded: read what the server would serve.
        let given: Vec<std::path::PathBuf> =
            paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        let paths = match &delta {
            Some(d) => d.bases(&given),
            None => given,
        };
        let bases = if paths.is_empty() {
            None
        } else {
            Some(Collection::open(&paths, no_mmap)?)
        };
        let value_names = match &bases {
            Some(b) => b.value_names(),
            None => vec!["offset".into(), "digest".into()],
        };
        let lone_file = paths.len() == 1 && !paths[0].is_dir();
        Ok(Live {
            bases,
            delta,
            value_names,
            lone_file,
        })
    }

    /// The view to read through.
    pub fn merged(&self) -> Merged<'_> {
        Merged::new(
            self.bases.as_ref(),
            self.delta.as_ref(),
            &self.value_names,
            self.lone_file,
        )
    }

    /// Writes every line of the collection (bases + delta - tombstones, in
    /// byte order) to a temporary file, for the tools that read index
    /// files front to back (`cat`, `stats`, `mementomap generate`): the
    /// first base's header lines, then the lines as they are when they
    /// share one shape (a file of the same lines answers the same); when
    /// CDX and CDXJ lines mix (a CDXJ base and CDX11 posts), every line
    /// converted into a UKVS capture record instead. Disk O(collection),
    /// memory O(line).
    pub fn spill(&self, tmp_dir: Option<&Path>) -> anyhow::Result<tempfile::NamedTempFile> {
        use anyhow::Context;
        use std::io::Write;
        let made = |convert: bool| -> anyhow::Result<Option<tempfile::NamedTempFile>> {
            let file = match tmp_dir {
                Some(d) => tempfile::NamedTempFile::new_in(d),
                None => tempfile::NamedTempFile::new(),
            }
            .context("cannot make a temporary file for the collection's lines")?;
            let mut out = std::io::BufWriter::with_capacity(1 << 16, file);
            let merged = self.merged();
            if !convert {
                if let Some(first) = merged.sources().first() {
                    for h in first.headers() {
                        out.write_all(h)?;
                        out.write_all(b"\n")?;
                    }
                }
            }
            let all = KeyRange::all();
            let mut first_shape = None;
            let mut buf = Vec::new();
            for (n, line) in merged.lines(&all)?.enumerate() {
                let line = line?;
                if convert {
                    buf.clear();
                    to_record(&line, n as u64 + 1, &mut buf)?;
                    out.write_all(&buf)?;
                } else {
                    let s = shape(&line);
                    if *first_shape.get_or_insert(s) != s {
                        return Ok(None);
                    }
                    out.write_all(&line)?;
                }
                out.write_all(b"\n")?;
            }
            let file = out.into_inner().map_err(|e| e.into_error())?;
            Ok(Some(file))
        };
        match made(false)? {
            Some(f) => Ok(f),
            None => Ok(made(true)?.expect("a converted spill is whole")),
        }
    }

    /// The SURT profile queries are keyed with (the bases'; the default
    /// for a delta alone).
    pub fn surt_options(&self) -> Result<crate::surt::Options, super::lookup::Error> {
        match &self.bases {
            Some(b) => b.surt_options(),
            None => Ok(crate::surt::Options::default()),
        }
    }
}

/// A CDX (by its column count) or CDXJ line as a UKVS capture record; a
/// UKVS line as it is.
fn to_record(line: &[u8], n: u64, buf: &mut Vec<u8>) -> anyhow::Result<()> {
    use crate::ukvs::convert;
    let capture = match shape(line) {
        0 => convert::from_cdxj(line, n)?,
        1 => {
            buf.extend_from_slice(line);
            return Ok(());
        }
        _ => match convert::legend_by_count(line) {
            Some(legend) => convert::from_cdx(&legend, line, n)?,
            None => anyhow::bail!(
                "line {n}: {:?} is neither CDX, CDXJ nor UKVS",
                String::from_utf8_lossy(line)
            ),
        },
    };
    capture.format(buf);
    Ok(())
}

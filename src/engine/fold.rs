//! Folding a live collection: its bases and its delta's frozen
//! generations merged into one new base, swapped in atomically.
//!
//! ```text
//! Delta::freeze      one durable write: a new generation takes writes
//!        │           from here; the older ones are frozen
//!        ▼
//! the bases' lines (k-way merge, byte order) and the frozen
//!        │ generations' captures (id order), read side by side: both
//!        │ come in key-datetime order; a base line whose capture a
//!        │ frozen one has is left out, the rest merged in byte order
//!        ▼
//! DIR/NAME/base-N.EXT, temporary file + fsync + rename (a cluster: the
//!        │            plain file cut by the zipnum writer, built
//!        │            beside base-N/ and put in place whole)
//!        ▼
//! Frozen::commit     one durable write: the bases are [base-N] (the
//!                    given paths superseded), the floor past the frozen
//!                    generations, which are dropped
//! ```
//!
//! Killed at any point, the store still lists the frozen generations and
//! the old bases: the collection answers as before, and what the fold
//! wrote is removed when the store next opens. Memory: one line per base
//! and generation, and the captures of one key and datetime.

use std::borrow::Cow;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::error::Kind;
use super::live::{self, Delta, Entry};
use super::lookup::{Collection, MergeBy};
use super::output::{write_behind, Cache, Output};

/// Why a fold failed (the collection is then as before: the delta keeps
/// every generation, the bases are served on).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The delta's store failed (the store's file is named).
    #[error(transparent)]
    Delta(#[from] super::live::Error),
    /// The new base is written but the store could not record it: the
    /// new base is left unused.
    #[error("the fold's base is written but not recorded: the collection is as before")]
    Record(#[source] super::live::Error),
    /// The bases cannot be opened (the file is named).
    #[error(transparent)]
    Bases(Box<super::lookup::Error>),
    /// A base cannot be read from its start: see the cause.
    #[error("cannot read {name}")]
    Open {
        name: String,
        #[source]
        cause: Box<super::lookup::Error>,
    },
    /// A base's lines broke off (damage found while reading on).
    #[error("{name}: {cause}")]
    Lines {
        name: String,
        cause: crate::sorted::Error,
    },
    /// The bases' headers do not go together.
    #[error(transparent)]
    Headers(#[from] super::sort::Error),
    /// The new base, a cluster, cannot be cut from its lines.
    #[error(transparent)]
    Cluster(#[from] super::zipnum::Error),
    /// A cluster was asked for, but the bases name their values in a
    /// header (`!fields`), which a cluster cannot keep: its lines would
    /// be read with other names.
    #[error(
        "a ZipNum cluster keeps no header lines, and the bases name their values \
         ({fields:?}): fold into a file"
    )]
    ClusterFields { fields: String },
    /// The delta's directory cannot be flushed to disk.
    #[error("cannot flush the directory {}", .dir.display())]
    Sync {
        dir: PathBuf,
        #[source]
        cause: io::Error,
    },
    /// The new base cannot be created, written or put in place.
    #[error(transparent)]
    Output(#[from] io::Error),
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Kind {
        match self {
            // The delta's store is a local one.
            Error::Delta(_) | Error::Record(_) => Kind::Io,
            Error::Bases(e) | Error::Open { cause: e, .. } => e.kind(),
            Error::Lines { cause, .. } => Kind::of_sorted(cause),
            Error::Headers(e) => e.kind(),
            Error::Cluster(e) => e.kind(),
            Error::ClusterFields { .. } => Kind::Usage,
            Error::Sync { cause, .. } | Error::Output(cause) => Kind::of_io(cause),
        }
    }
}

impl From<super::lookup::Error> for Error {
    fn from(e: super::lookup::Error) -> Error {
        Error::Bases(Box::new(e))
    }
}

/// What a fold did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// The new base.
    pub base: PathBuf,
    /// Lines written to it.
    pub lines: u64,
    /// Of them, lines from the delta.
    pub from_delta: u64,
    /// Lines of the bases left out (deleted or replaced).
    pub hidden: u64,
}

/// What a fold writes its new base as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shape {
    /// A ZipNum cluster when one of the bases is a cluster, else a sorted
    /// file in the bases' format (a collection with no base: CDXJ).
    #[default]
    AsBases,
    /// A sorted file, whatever the bases are.
    File,
    /// A ZipNum cluster (gzip blocks), whatever the bases are: about
    /// 0.3x the text of the same lines, where a sorted file is 1x and the
    /// delta's store about 1x (0.6x without a digest index). pywb's API
    /// pages wide queries over it, as over any cluster.
    Cluster,
}

/// Lines a ZipNum block of a folded cluster holds: `ukvs zipnum
/// build`'s default and pywb's, so that a page of pywb's API (10 blocks)
/// holds as many lines as over the clusters they build. Smaller blocks
/// answer exact lookups that miss the block cache faster (6.8M lines
/// served alone, 16 connections: 16,500 lookups/s with 300-line blocks,
/// 13,700 with 3,000) but cut a wide query into ten times the pages.
const LINES_PER_BLOCK: usize = 3000;

/// Frozen captures read from the store at a time, and the batches of
/// them read ahead of the merge.
const READ_BATCH: usize = 4096;
const READ_AHEAD: usize = 4;

/// Folds the delta into a new base made of the bases a collection given
/// `given` serves ([`Delta::bases`]) and the delta's generations up to
/// now. Gives what it did and a view of the delta that reads what is left
/// (to serve with the new base); `None` when a fold of this collection is
/// running already. `shape` says what the new base is.
///
/// The bases are read from the store once the fold holds it, not taken
/// from the caller: a list made before an earlier fold ended (a server
/// whose catalog was built before it, or kept after it) lacks the base
/// that fold wrote, which this one's commit retires.
pub fn fold(
    delta: &Delta,
    given: &[PathBuf],
    no_mmap: bool,
    shape: Shape,
) -> Result<Option<(Report, Delta)>, Error> {
    let Some(frozen) = delta.freeze()? else {
        return Ok(None);
    };
    let bases = &delta.bases(given)[..];
    let index = if bases.is_empty() {
        None
    } else {
        Some(Collection::open(bases, no_mmap)?)
    };
    let sources = index.as_ref().map_or(&[][..], |i| i.sources());
    let names = index.as_ref().map_or_else(
        || vec!["offset".to_string(), "digest".to_string()],
        Collection::value_names,
    );
    let cluster = match shape {
        Shape::AsBases => sources.iter().any(|s| s.is_cluster()),
        Shape::File => false,
        Shape::Cluster => true,
    };
    let ext = sources
        .iter()
        .filter(|s| !s.is_cluster())
        .find_map(|s| s.path().extension())
        .map_or_else(
            || ".cdxj".to_string(),
            |e| format!(".{}", e.to_string_lossy()),
        );
    let target = frozen.base_path(if cluster { "" } else { &ext });
    let mut headers = Vec::new();
    for s in sources {
        for h in s.headers() {
            headers.push((h.to_vec(), s.name().to_string()));
        }
    }
    let headers = super::sort::combine_headers(headers)?;
    // A cluster is read with the default value names (`offset digest`).
    if cluster {
        let fields = headers.iter().filter(|h| h.starts_with(b"!fields "));
        let named = super::lookup::value_names_in(fields.map(|h| &h[..]));
        if let Some(fields) = named.filter(|f| f[..] != ["offset", "digest"]) {
            return Err(Error::ClusterFields {
                fields: fields.join(" "),
            });
        }
    }

    type Lines<'a> = Box<dyn Iterator<Item = Result<Cow<'a, [u8]>, Error>> + 'a>;
    let mut each: Vec<Lines> = Vec::new();
    for s in sources {
        let lines = s.every_line().map_err(|cause| Error::Open {
            name: s.name().to_string(),
            cause: Box::new(cause),
        })?;
        let name = s.name().to_string();
        each.push(Box::new(lines.map(move |l| {
            l.map_err(|cause| Error::Lines {
                name: name.clone(),
                cause,
            })
        })));
    }
    let base = MergeBy::new(each, |a: &Cow<[u8]>, b: &Cow<[u8]>| a < b);
    let base = base.map(|r| r.map(|(line, _)| line));

    // A cluster is cut from a plain file beside it.
    let plain = if cluster {
        frozen.base_path(&format!(".lines{ext}"))
    } else {
        target.clone()
    };
    let mut out = Output::file(&plain)?.durable();
    // The base is written around the page cache, but for the file a
    // cluster is cut from, which is read back at once.
    let cache = match cluster {
        true => Cache::Keep,
        false => Cache::Bypass,
    };
    for h in &headers {
        out.write_all_line(h)?;
    }
    // Three threads beside the merge: one reads the frozen captures
    // from the store, one writes the merged bytes, one decides (and
    // may make) the digest index after the fold.
    let (counts, out, digests) = std::thread::scope(|s| {
        let digests = s.spawn(|| frozen.index_digests());
        let (tx, rx) = std::sync::mpsc::sync_channel(READ_AHEAD);
        let frozen = &frozen;
        s.spawn(move || {
            let mut batch = Vec::with_capacity(READ_BATCH);
            for e in frozen.entries() {
                batch.push(e);
                if batch.len() == READ_BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(READ_BATCH));
                    // The merge stopped (at an error it gives).
                    if tx.send(full).is_err() {
                        return;
                    }
                }
            }
            let _ = tx.send(batch);
        });
        let entries = rx.into_iter().flatten();
        let (counts, out) = write_behind(out, cache, |w| write_merged(base, entries, &names, w));
        let digests = digests
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (counts, out, digests)
    });
    // A write error first: the merge then stopped for it.
    let out = out?;
    let counts = counts?;
    digests.map_err(Error::Record)?;
    out.commit()?;
    if cluster {
        let built = super::zipnum::build(&super::zipnum::BuildJob {
            input: plain.clone(),
            output: target.clone(),
            lines_per_block: LINES_PER_BLOCK,
            shards: 1,
            level: 6,
            layout: Default::default(),
        });
        let _ = std::fs::remove_file(&plain);
        built?;
    }
    sync_dir(delta.path())?;
    let report = Report {
        base: target.clone(),
        lines: counts.lines,
        from_delta: counts.from_delta,
        hidden: counts.hidden,
    };
    let view = frozen.commit(bases, &target).map_err(Error::Record)?;
    Ok(Some((report, view)))
}

fn sync_dir(dir: &Path) -> Result<(), Error> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|cause| Error::Sync {
            dir: dir.to_path_buf(),
            cause,
        })
}

/// What [`write_merged`] wrote.
struct Counts {
    lines: u64,
    from_delta: u64,
    hidden: u64,
}

/// The captures of one `key datetime` of the frozen generations, in
/// byte order of their lines (deleted ones first), the first `written`
/// of them written.
#[derive(Default)]
struct Group {
    head: Vec<u8>,
    entries: Vec<Entry>,
    written: usize,
}

impl Group {
    /// Loads the next `key datetime`'s captures; `false` when there are
    /// no more.
    fn load(
        &mut self,
        from: &mut std::iter::Peekable<impl Iterator<Item = Result<Entry, live::Error>>>,
    ) -> Result<bool, Error> {
        self.entries.clear();
        self.written = 0;
        let Some(first) = from.next().transpose()? else {
            return Ok(false);
        };
        self.head.clear();
        self.head.extend_from_slice(first.head());
        self.entries.push(first);
        loop {
            match from.peek() {
                Some(Ok(e)) if e.has_head(&self.head) => {
                    let e = from.next().transpose()?.expect("peeked");
                    self.entries.push(e);
                }
                Some(Err(_)) => {
                    from.next().transpose()?;
                }
                _ => break,
            }
        }
        if self.entries.len() > 1 {
            self.entries.sort_by_cached_key(Entry::line);
        }
        Ok(true)
    }

    /// Writes its lines not written yet that sort before `line` (all of
    /// them without one).
    fn write_before(
        &mut self,
        line: Option<&[u8]>,
        out: &mut impl Write,
        counts: &mut Counts,
    ) -> Result<(), Error> {
        while let Some(e) = self.entries.get(self.written) {
            let mut spelled = [0; live::SPELLED];
            let Some(parts) = e.line_parts(&mut spelled) else {
                self.written += 1;
                continue;
            };
            if let Some(line) = line {
                if cmp_parts(&parts, line).is_ge() {
                    break;
                }
            }
            for p in parts {
                out.write_all(p)?;
            }
            out.write_all(b"\n")?;
            counts.lines += 1;
            counts.from_delta += 1;
            self.written += 1;
        }
        Ok(())
    }

    fn hides(&self, id: &[u8]) -> bool {
        self.entries.iter().any(|e| e.id() == id)
    }
}

/// How the line written as `parts`, one after the other, orders against
/// `line`, without joining them.
fn cmp_parts(parts: &[&[u8]], line: &[u8]) -> std::cmp::Ordering {
    let mut rest = line;
    for part in parts {
        let n = part.len().min(rest.len());
        match part[..n].cmp(&rest[..n]) {
            std::cmp::Ordering::Equal if n < part.len() => return std::cmp::Ordering::Greater,
            std::cmp::Ordering::Equal => rest = &rest[n..],
            unequal => return unequal,
        }
    }
    if rest.is_empty() {
        std::cmp::Ordering::Equal
    } else {
        std::cmp::Ordering::Less
    }
}

/// Writes the base lines not hidden and the frozen lines, in byte order,
/// in one pass over each: both come in `key datetime` order (ids sort
/// as their lines do but within one key and datetime), so the frozen
/// captures of one key and datetime are held while the base lines of
/// that key and datetime go by; a base line is hidden when a frozen
/// capture has its id.
fn write_merged<'a>(
    base: impl Iterator<Item = Result<Cow<'a, [u8]>, Error>>,
    entries: impl Iterator<Item = Result<Entry, live::Error>>,
    names: &[String],
    out: &mut impl Write,
) -> Result<Counts, Error> {
    let mut counts = Counts {
        lines: 0,
        from_delta: 0,
        hidden: 0,
    };
    let mut entries = entries.peekable();
    let mut group = Group::default();
    let mut more = group.load(&mut entries)?;
    let mut base = base.peekable();
    loop {
        if !more {
            // The frozen captures are done: the rest of the bases.
            for line in base.by_ref() {
                write_line(out, &line?)?;
                counts.lines += 1;
            }
            break;
        }
        let line = match base.peek() {
            None => None,
            Some(Ok(l)) => Some(l),
            Some(Err(_)) => {
                base.next().transpose()?;
                None
            }
        };
        let Some(line) = line else {
            group.write_before(None, out, &mut counts)?;
            more = group.load(&mut entries)?;
            continue;
        };
        let head = line_head(line).unwrap_or(line);
        match group.head.as_slice().cmp(head) {
            std::cmp::Ordering::Less => {
                group.write_before(None, out, &mut counts)?;
                more = group.load(&mut entries)?;
            }
            std::cmp::Ordering::Greater => {
                let line = base.next().expect("peeked")?;
                write_line(out, &line)?;
                counts.lines += 1;
            }
            std::cmp::Ordering::Equal => {
                let line = base.next().expect("peeked")?;
                let hidden =
                    crate::ukvs::post::line_id(&line, names).is_some_and(|id| group.hides(&id));
                if hidden {
                    counts.hidden += 1;
                    continue;
                }
                group.write_before(Some(&line), out, &mut counts)?;
                write_line(out, &line)?;
                counts.lines += 1;
            }
        }
    }
    Ok(counts)
}

fn write_line(out: &mut impl Write, line: &[u8]) -> std::io::Result<()> {
    out.write_all(line)?;
    out.write_all(b"\n")
}

/// A line's `key datetime`: up to its second space (`None` without one).
fn line_head(line: &[u8]) -> Option<&[u8]> {
    let first = memchr::memchr(b' ', line)?;
    let second = memchr::memchr(b' ', &line[first + 1..])?;
    Some(&line[..first + 1 + second])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way of cutting a line into parts orders against every other
    /// line as the joined parts do.
    #[test]
    fn parts_order_as_their_join() {
        let lines: [&[u8]; 7] = [b"", b"a", b"a ", b"a b", b"a b 1", b"a c", b"b"];
        for joined in lines {
            for cut1 in 0..=joined.len() {
                for cut2 in cut1..=joined.len() {
                    let parts = [&joined[..cut1], b"", &joined[cut1..cut2], &joined[cut2..]];
                    for line in lines {
                        assert_eq!(
                            cmp_parts(&parts, line),
                            joined.cmp(line),
                            "{parts:?} against {line:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn errors_say_their_kind_and_name_the_base() {
        use crate::engine::error::Kind;
        let dir = tempfile::tempdir().unwrap();
        let delta = Delta::open(&dir.path().join("d")).unwrap();
        delta
            .apply(vec![put(&cdx("a)/", "20200101000000", "A", "f.warc", "1"))])
            .unwrap();
        let absent = dir.path().join("absent.cdx");
        let err = fold(&delta, std::slice::from_ref(&absent), false, Shape::AsBases).unwrap_err();
        assert_eq!(err.kind(), Kind::Missing, "{err:?}");
        assert!(
            err.to_string().contains(&*absent.to_string_lossy()),
            "{err}"
        );
        let cut = crate::engine::error::fixtures::cut_gzip_index(dir.path());
        let err = fold(&delta, std::slice::from_ref(&cut), false, Shape::AsBases).unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput, "{err:?}");
        assert!(err.to_string().contains("is gzip-compressed"), "{err}");
        // The delta is as it was: a fold with a good base goes through.
        let base = dir.path().join("base.cdx");
        std::fs::write(
            &base,
            cdx("b)/", "20200101000000", "B", "f.warc", "2") + "\n",
        )
        .unwrap();
        let (report, _) = fold(&delta, &[base], false, Shape::AsBases)
            .unwrap()
            .unwrap();
        assert_eq!((report.lines, report.from_delta), (2, 1));
    }
    use crate::engine::live::{capture_id, Op};

    fn cdx(key: &str, dt: &str, digest: &str, file: &str, off: &str) -> String {
        format!("{key} {dt} http://x/ text/html 200 {digest} - - 10 {off} {file}")
    }

    fn put(line: &str) -> Result<Op, String> {
        let f: Vec<&str> = line.split(' ').collect();
        Ok(Op::Put {
            id: capture_id(
                f[0].as_bytes(),
                f[1].as_bytes(),
                f[10].as_bytes(),
                f[9].as_bytes(),
            ),
            line: line.as_bytes().to_vec(),
        })
    }

    /// A fold given the paths the collection was first given (a server's
    /// catalog made before an earlier fold ended) folds the base that
    /// fold wrote, not the paths it superseded: nothing that fold took
    /// is lost, nothing it hid comes back.
    #[test]
    fn a_fold_given_superseded_paths_folds_the_base_an_earlier_fold_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let delta = Delta::open(&dir.path().join("d")).unwrap();
        let t = "20200101000000";
        let base = dir.path().join("base.cdx");
        let first = cdx("a)/", t, "A", "f.warc", "1");
        let hidden = cdx("b)/", t, "B", "f.warc", "2");
        std::fs::write(&base, format!("{first}\n{hidden}\n")).unwrap();
        let given = std::slice::from_ref(&base);
        let folded = cdx("c)/", t, "C", "f.warc", "3");
        delta.apply(vec![put(&folded)]).unwrap();
        delta
            .apply(vec![Ok::<_, String>(Op::Delete {
                id: capture_id(b"b)/", t.as_bytes(), b"f.warc", b"2"),
            })])
            .unwrap();
        let (_, view) = fold(&delta, given, false, Shape::AsBases).unwrap().unwrap();
        let later = cdx("d)/", t, "D", "f.warc", "4");
        view.apply(vec![put(&later)]).unwrap();
        // The old view and the paths first given, as a stale catalog has.
        let (report, view) = fold(&delta, given, false, Shape::AsBases).unwrap().unwrap();
        assert_eq!((report.lines, report.from_delta), (3, 1));
        let bases = view.bases(given);
        assert_eq!(bases.len(), 1, "{bases:?}");
        let got = std::fs::read_to_string(&bases[0]).unwrap();
        assert_eq!(got.lines().collect::<Vec<_>>(), [&first, &folded, &later]);
        // Again with the list of bases this fold left (the base it
        // wrote), after a fold that superseded it and deleted a line.
        let stale = bases;
        view.apply(vec![Ok::<_, String>(Op::Delete {
            id: capture_id(b"c)/", t.as_bytes(), b"f.warc", b"3"),
        })])
        .unwrap();
        let (_, view) = fold(&delta, given, false, Shape::AsBases).unwrap().unwrap();
        let last = cdx("e)/", t, "E", "f.warc", "5");
        view.apply(vec![put(&last)]).unwrap();
        let (report, view) = fold(&delta, &stale, false, Shape::AsBases)
            .unwrap()
            .unwrap();
        assert_eq!((report.lines, report.from_delta), (3, 1));
        let bases = view.bases(given);
        assert_eq!(view.bases(&stale), bases);
        let got = std::fs::read_to_string(&bases[0]).unwrap();
        assert_eq!(got.lines().collect::<Vec<_>>(), [first, later, last]);
    }

    #[test]
    fn lines_of_one_key_and_datetime_interleave_and_hide_in_byte_order() {
        let dir = tempfile::tempdir().unwrap();
        let delta = Delta::open(&dir.path().join("d")).unwrap();
        let t = "20200101000000";
        let base = vec![
            cdx("a)/", t, "B", "f.warc", "1"),
            cdx("b)/", t, "A", "f.warc", "1"),
            cdx("b)/", t, "C", "f.warc", "2"),
            cdx("b)/", t, "E", "f.warc", "3"),
            cdx("b)/", "2020010100000", "Z", "f.warc", "3"),
            cdx("c)/", t, "A", "f.warc", "1"),
        ];
        let mut base = base;
        base.sort();
        delta
            .apply(vec![
                // Replaces b)/ ... C (same capture), interleaves with A..E.
                put(&cdx("b)/", t, "D", "f.warc", "2")),
                put(&cdx("b)/", t, "B", "g.warc", "9")),
                put(&cdx("b)/", t, "F", "e.warc", "0")),
                put(&cdx("d)/", t, "A", "f.warc", "1")),
                put(&cdx("0)/", t, "A", "f.warc", "1")),
            ])
            .unwrap();
        delta
            .apply(vec![Ok::<_, String>(Op::Delete {
                id: capture_id(b"c)/", t.as_bytes(), b"f.warc", b"1"),
            })])
            .unwrap();
        let frozen = delta.freeze().unwrap().unwrap();
        let path = dir.path().join("out.cdx");
        let mut out = Output::file(&path).unwrap();
        let names = vec!["offset".to_string(), "digest".to_string()];
        let lines = base.iter().map(|l| Ok(Cow::Borrowed(l.as_bytes())));
        let counts = write_merged(lines, frozen.entries(), &names, &mut out).unwrap();
        out.commit().unwrap();
        let mut want: Vec<String> = base
            .iter()
            .filter(|l| !l.contains(" C ") && !l.starts_with("c)/"))
            .cloned()
            .collect();
        for (k, d, f, o) in [
            ("b)/", "D", "f.warc", "2"),
            ("b)/", "B", "g.warc", "9"),
            ("b)/", "F", "e.warc", "0"),
            ("d)/", "A", "f.warc", "1"),
            ("0)/", "A", "f.warc", "1"),
        ] {
            want.push(cdx(k, t, d, f, o));
        }
        want.sort();
        let got = std::fs::read_to_string(&path).unwrap();
        assert_eq!(got.lines().collect::<Vec<_>>(), want);
        assert_eq!((counts.lines, counts.from_delta, counts.hidden), (9, 5, 2));
    }
}

//! Folding a live collection: its bases and its delta's frozen
//! generations merged into one new base, swapped in atomically.
//!
//! ```text
//! Delta::freeze      one durable write: a new generation takes writes
//!        │           from here; the older ones are frozen
//!        ▼
//! each base's lines ─ the frozen generations' ids (a merge join: both
//!        │            come in key-datetime order) ─► unhidden lines
//!        ▼
//! k-way merge (byte order) with the frozen generations' lines
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
//! and generation, and the ids of one key and datetime.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use super::live::{Delta, Frozen, FrozenIds};
use super::lookup::{Collection, MergeBy};
use super::output::Output;
use crate::sorted::{KeyRange, MatchType};

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

/// Lines a ZipNum block of a folded cluster holds (`ukvs zipnum build`'s
/// default).
const LINES_PER_BLOCK: usize = 3000;

/// Folds the delta into a new base made of `bases` (the paths the
/// collection serves, [`Delta::bases`]) and the delta's generations up to
/// now. Gives what it did and a view of the delta that reads what is left
/// (to serve with the new base); `None` when a fold of this collection is
/// running already.
pub fn fold(
    delta: &Delta,
    bases: &[PathBuf],
    no_mmap: bool,
) -> anyhow::Result<Option<(Report, Delta)>> {
    let Some(frozen) = delta.freeze()? else {
        return Ok(None);
    };
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
    let cluster = sources.iter().any(|s| s.is_cluster());
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

    let all = KeyRange::new(b"", MatchType::Prefix);
    type Lines<'a> = Box<dyn Iterator<Item = anyhow::Result<Cow<'a, [u8]>>> + 'a>;
    let hidden = std::cell::Cell::new(0u64);
    let from_delta = std::cell::Cell::new(0u64);
    let mut each: Vec<Lines> = Vec::new();
    for s in sources {
        let mut join = Join::new(&frozen);
        let names = &names;
        let hidden = &hidden;
        let lines = s
            .every_line()
            .with_context(|| format!("cannot read {}", s.name()))?;
        let name = s.name().to_string();
        each.push(Box::new(lines.filter_map(move |l| {
            let line = match l {
                Ok(l) => l,
                Err(e) => return Some(Err(anyhow::anyhow!("{name}: {e}"))),
            };
            match crate::ukvs::post::line_id(&line, names).map(|id| join.hides(&id)) {
                None | Some(Ok(false)) => Some(Ok(line)),
                Some(Ok(true)) => {
                    hidden.set(hidden.get() + 1);
                    None
                }
                Some(Err(e)) => Some(Err(e.into())),
            }
        })));
    }
    let fd = &from_delta;
    each.push(Box::new(frozen.lines(&all).map(move |l| {
        fd.set(fd.get() + 1);
        l.map(Cow::Owned).map_err(Into::into)
    })));
    let merged = MergeBy::new(each, |a: &Cow<[u8]>, b: &Cow<[u8]>| a < b);

    // A cluster is cut from a plain file beside it.
    let plain = if cluster {
        frozen.base_path(&format!(".lines{ext}"))
    } else {
        target.clone()
    };
    let mut out = Output::file(&plain)?.durable();
    for h in &headers {
        out.write_all_line(h)?;
    }
    let mut lines = 0u64;
    for line in merged {
        let (line, _) = line?;
        out.write_all_line(&line)?;
        lines += 1;
    }
    out.commit()?;
    if cluster {
        let built = super::zipnum::build(&super::zipnum::BuildJob {
            input: plain.clone(),
            output: target.clone(),
            lines_per_block: LINES_PER_BLOCK,
            shards: 1,
            level: 6,
        });
        let _ = std::fs::remove_file(&plain);
        built?;
    }
    sync_dir(delta.path())?;
    let report = Report {
        base: target.clone(),
        lines,
        from_delta: from_delta.get(),
        hidden: hidden.get(),
    };
    let view = frozen
        .commit(bases, &target)
        .context("the fold's base is written but not recorded: the collection is as before")?;
    Ok(Some((report, view)))
}

fn sync_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot flush the directory {}", dir.display()))
}

/// The frozen ids that hide a base's lines, read along with them: base
/// lines come in byte order, ids in id order, and both order by `key
/// datetime` first; the ids of the current `key datetime` are held.
struct Join<'f> {
    frozen: &'f Frozen<'f>,
    ids: std::iter::Peekable<FrozenIds>,
    head: Vec<u8>,
    group: HashSet<Vec<u8>>,
}

fn head_of(id: &[u8]) -> &[u8] {
    &id[..memchr::memchr(0, id).unwrap_or(id.len())]
}

impl<'f> Join<'f> {
    fn new(frozen: &'f Frozen<'f>) -> Join<'f> {
        Join {
            frozen,
            ids: frozen.ids().peekable(),
            head: Vec::new(),
            group: HashSet::new(),
        }
    }

    fn hides(&mut self, id: &[u8]) -> anyhow::Result<bool> {
        let head = head_of(id);
        if head < self.head.as_slice() {
            // Out of the order the join reads in: asked of the store.
            return Ok(self.frozen.hides(id)?);
        }
        if head != self.head.as_slice() {
            self.head = head.to_vec();
            self.group.clear();
            loop {
                let next = match self.ids.peek() {
                    None => break,
                    Some(Err(_)) => match self.ids.next() {
                        Some(Err(e)) => return Err(e.into()),
                        _ => bail!("the delta's ids could not be read"),
                    },
                    Some(Ok(i)) => head_of(i).cmp(head),
                };
                match next {
                    std::cmp::Ordering::Less => {
                        self.ids.next();
                    }
                    std::cmp::Ordering::Equal => {
                        if let Some(Ok(i)) = self.ids.next() {
                            self.group.insert(i);
                        }
                    }
                    std::cmp::Ordering::Greater => break,
                }
            }
        }
        Ok(self.group.contains(id))
    }
}

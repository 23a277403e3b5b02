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
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::live::{Delta, FrozenEntries};
use super::lookup::{Collection, MergeBy};
use super::output::Output;

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

    type Lines<'a> = Box<dyn Iterator<Item = anyhow::Result<Cow<'a, [u8]>>> + 'a>;
    let mut each: Vec<Lines> = Vec::new();
    for s in sources {
        let lines = s
            .every_line()
            .with_context(|| format!("cannot read {}", s.name()))?;
        let name = s.name().to_string();
        each.push(Box::new(
            lines.map(move |l| l.map_err(|e| anyhow::anyhow!("{name}: {e}"))),
        ));
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
    for h in &headers {
        out.write_all_line(h)?;
    }
    let counts = write_merged(base, frozen.entries(), &names, &mut out)?;
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
        lines: counts.lines,
        from_delta: counts.from_delta,
        hidden: counts.hidden,
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

/// What [`write_merged`] wrote.
struct Counts {
    lines: u64,
    from_delta: u64,
    hidden: u64,
}

/// The captures of one `key datetime` of the frozen generations: their
/// ids, and their lines in byte order.
struct Group {
    head: Vec<u8>,
    ids: Vec<Vec<u8>>,
    lines: std::collections::VecDeque<Vec<u8>>,
}

/// Writes the base lines not hidden and the frozen lines, in byte order,
/// in one pass over each: both come in `key datetime` order (ids sort
/// as their lines do but within one key and datetime), so the frozen
/// captures of one key and datetime are held while the base lines of
/// that key and datetime go by; a base line is hidden when a frozen
/// capture has its id.
fn write_merged<'a>(
    base: impl Iterator<Item = anyhow::Result<Cow<'a, [u8]>>>,
    entries: FrozenEntries,
    names: &[String],
    out: &mut Output,
) -> anyhow::Result<Counts> {
    let mut counts = Counts {
        lines: 0,
        from_delta: 0,
        hidden: 0,
    };
    let mut entries = entries.peekable();
    let next_group =
        |entries: &mut std::iter::Peekable<FrozenEntries>| -> anyhow::Result<Option<Group>> {
            let Some(first) = entries.next().transpose()? else {
                return Ok(None);
            };
            let mut g = Group {
                head: first.head().to_vec(),
                ids: vec![first.id().to_vec()],
                lines: first.line().into_iter().collect(),
            };
            while let Some(Ok(e)) = entries.peek() {
                if e.head() != g.head.as_slice() {
                    break;
                }
                let e = entries.next().transpose()?.expect("peeked");
                g.ids.push(e.id().to_vec());
                g.lines.extend(e.line());
            }
            if let Some(Err(_)) = entries.peek() {
                entries.next().transpose()?;
            }
            g.lines.make_contiguous().sort_unstable();
            Ok(Some(g))
        };
    let mut group = next_group(&mut entries)?;
    let mut write = |line: &[u8], delta: bool, counts: &mut Counts| -> anyhow::Result<()> {
        out.write_all_line(line)?;
        counts.lines += 1;
        counts.from_delta += u64::from(delta);
        Ok(())
    };
    let mut base = base.peekable();
    loop {
        let Some(g) = &mut group else {
            // The frozen captures are done: the rest of the bases.
            for line in base.by_ref() {
                write(&line?, false, &mut counts)?;
            }
            break;
        };
        let line = match base.peek() {
            None => None,
            Some(Ok(l)) => Some(l),
            Some(Err(_)) => {
                base.next().transpose()?;
                unreachable!("an error was peeked");
            }
        };
        let Some(line) = line else {
            for l in g.lines.drain(..) {
                write(&l, true, &mut counts)?;
            }
            group = next_group(&mut entries)?;
            continue;
        };
        let head = line_head(line).unwrap_or(line);
        match g.head.as_slice().cmp(head) {
            std::cmp::Ordering::Less => {
                for l in g.lines.drain(..) {
                    write(&l, true, &mut counts)?;
                }
                group = next_group(&mut entries)?;
            }
            std::cmp::Ordering::Greater => {
                let line = base.next().expect("peeked")?;
                write(&line, false, &mut counts)?;
            }
            std::cmp::Ordering::Equal => {
                let line = base.next().expect("peeked")?;
                let hidden = crate::ukvs::post::line_id(&line, names)
                    .is_some_and(|id| g.ids.iter().any(|i| *i == id));
                if hidden {
                    counts.hidden += 1;
                    continue;
                }
                while g.lines.front().is_some_and(|l| l.as_slice() < &line[..]) {
                    let l = g.lines.pop_front().expect("checked");
                    write(&l, true, &mut counts)?;
                }
                write(&line, false, &mut counts)?;
            }
        }
    }
    Ok(counts)
}

/// A line's `key datetime`: up to its second space (`None` without one).
fn line_head(line: &[u8]) -> Option<&[u8]> {
    let first = memchr::memchr(b' ', line)?;
    let second = memchr::memchr(b' ', &line[first + 1..])?;
    Some(&line[..first + 1 + second])
}

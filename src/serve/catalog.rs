//! The served collections: `NAME=PATH` specs, opened into the engine's
//! sources.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use std::sync::Arc;

use ukvs::engine::live::Delta;
use ukvs::engine::lookup::Collection;
use ukvs::engine::maps::MapFile;

/// One `NAME=PATH`, `NAME=map:PATH`, `NAME=acl:PATH` or
/// `NAME=digests:PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    pub name: String,
    pub kind: Kind,
    pub path: PathBuf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A sorted index file, a directory of them, or a ZipNum cluster.
    Index,
    /// A MementoMap for `/NAME/mementomap`.
    Map,
    /// pywb access rules (`.aclj`).
    Acl,
    /// A digest file (or a directory of them) for `/NAME/digest` and
    /// `resolveRevisits`.
    Digests,
    /// `NAME=writes:off`: the collection takes no writes.
    ReadOnly,
}

impl std::str::FromStr for Spec {
    type Err = String;

    fn from_str(s: &str) -> Result<Spec, String> {
        let (name, rest) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?} is not NAME=PATH"))?;
        let name = name.trim();
        check_name(name)?;
        if rest == "writes:off" {
            return Ok(Spec {
                name: name.to_string(),
                kind: Kind::ReadOnly,
                path: PathBuf::new(),
            });
        }
        let (kind, path) = if let Some(p) = rest.strip_prefix("map:") {
            (Kind::Map, p)
        } else if let Some(p) = rest.strip_prefix("acl:") {
            (Kind::Acl, p)
        } else if let Some(p) = rest.strip_prefix("digests:") {
            (Kind::Digests, p)
        } else {
            (Kind::Index, rest)
        };
        if path.is_empty() {
            return Err(format!("{s:?} gives no path"));
        }
        Ok(Spec {
            name: name.to_string(),
            kind,
            path: PathBuf::from(path),
        })
    }
}

/// Whether `name` can name a collection (it is also a directory of
/// `--data`).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        || name.starts_with('.')
        || name == "health"
    {
        return Err(format!(
            "{name:?} cannot name a collection: use letters, digits, `-`, `_` and `.` \
             (not first), and not `health`"
        ));
    }
    Ok(())
}

/// The specs of a config file: one `NAME=PATH` per line; blank lines and
/// lines starting with `#` are skipped.
pub fn read_config(path: &Path) -> anyhow::Result<Vec<Spec>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the config file {}", path.display()))?;
    let mut specs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let spec = line
            .parse()
            .map_err(|e| anyhow::anyhow!("{}: line {}: {e}", path.display(), i + 1))?;
        specs.push(spec);
    }
    Ok(specs)
}

/// One served collection.
pub struct Coll {
    pub name: String,
    /// The indexes, searched as one (none when only a map is served).
    pub index: Option<Collection>,
    /// What pywb calls each source in `"source"`.
    pub labels: Vec<String>,
    pub surt: ukvs::surt::Options,
    pub value_names: Vec<String>,
    pub map: Option<MapFile>,
    pub acl: Option<ukvs::acl::Rules>,
    /// Digest files, searched as one.
    pub digests: Option<Collection>,
    /// The delta that takes writes (`--data`), merged with the bases.
    pub live: Option<Arc<Delta>>,
    /// The specs it was opened from.
    pub specs: Vec<Spec>,
    /// The bases it serves (what a fold of its delta recorded in place
    /// of the paths it folded, see [`Delta::bases`]).
    pub bases: Vec<PathBuf>,
    /// The WARC entries of its packages, for `/NAME/archive/FILE`.
    pub archives: ukvs::engine::package::Archives,
}

impl Coll {
    /// Whether a lookup reads nothing but ZipNum blocks (through the
    /// block cache) and memory: every source a cluster, and a delta (if
    /// any) whose tables fit its store's cache ([`Delta::is_cached`]).
    /// Such lookups are first tried on the connection's thread
    /// ([`http::stream_held`](super::http::stream_held)), which spares
    /// each a hand-over to another thread (on 2 busy cores, most of an
    /// exact lookup's cost).
    pub fn reads_only_blocks(&self) -> bool {
        self.live.as_ref().map_or(true, |d| d.is_cached())
            && self.index.as_ref().map_or(self.live.is_some(), |i| {
                i.sources().iter().all(|s| s.is_cluster())
            })
    }

    /// The collection read as one: bases + delta - tombstones. A single
    /// file served alone takes the delta's lines among its own.
    pub fn merged(&self) -> ukvs::engine::merged::Merged<'_> {
        ukvs::engine::merged::Merged::new(
            self.index.as_ref(),
            self.live.as_deref(),
            &self.value_names,
            self.labels.first() == Some(&self.name),
        )
    }
}

/// A collection searched by URL for the originals of revisits: its bases
/// and its delta, less what the delta deleted.
impl ukvs::engine::digests::ByKey for Coll {
    fn key_lines(
        &self,
        range: &ukvs::sorted::KeyRange,
    ) -> Result<Vec<Vec<u8>>, ukvs::engine::digests::Error> {
        self.merged().key_lines(range)
    }
}

/// Every served collection by name.
pub struct Catalog {
    colls: BTreeMap<String, Arc<Coll>>,
    /// Names whose writes are refused (`NAME=writes:off` specs).
    read_only: std::collections::BTreeSet<String>,
}

impl Catalog {
    /// Opens every spec; several index specs under one name form one
    /// collection, their lines merged in byte order.
    /// A collection with a delta in `deltas` takes writes; one with
    /// nothing but a delta serves the delta alone.
    pub fn open(
        specs: &[Spec],
        no_mmap: bool,
        deltas: &BTreeMap<String, Arc<Delta>>,
        live: bool,
    ) -> anyhow::Result<Catalog> {
        let mut by_name: BTreeMap<&str, Vec<&Spec>> = BTreeMap::new();
        let mut read_only = std::collections::BTreeSet::new();
        for s in specs {
            if s.kind == Kind::ReadOnly {
                read_only.insert(s.name.clone());
            } else {
                by_name.entry(&s.name).or_default().push(s);
            }
        }
        for name in deltas.keys() {
            by_name.entry(name).or_default();
        }
        if by_name.is_empty() && !live {
            bail!("no collection to serve: give NAME=PATH arguments, --config FILE or --data DIR");
        }
        let mut colls = BTreeMap::new();
        for (name, specs) in by_name {
            let coll = open_coll(name, &specs, no_mmap, deltas.get(name).cloned())
                .with_context(|| format!("collection {name}"))?;
            colls.insert(name.to_string(), Arc::new(coll));
        }
        Ok(Catalog { colls, read_only })
    }

    /// This catalog and a new collection served from `delta` alone.
    pub fn with_delta(&self, name: &str, delta: Arc<Delta>) -> anyhow::Result<Catalog> {
        let mut colls = self.colls.clone();
        let coll = open_coll(name, &[], false, Some(delta))?;
        colls.insert(name.to_string(), Arc::new(coll));
        Ok(Catalog {
            colls,
            read_only: self.read_only.clone(),
        })
    }

    /// Whether the config refuses writes to `name`.
    pub fn is_read_only(&self, name: &str) -> bool {
        self.read_only.contains(name)
    }

    /// This catalog with the collection `name` opened again from its
    /// specs over `delta` (a view made by a fold, whose bases it serves).
    pub fn refolded(
        &self,
        name: &str,
        delta: Arc<Delta>,
        no_mmap: bool,
    ) -> anyhow::Result<Catalog> {
        let mut colls = self.colls.clone();
        let specs = colls.get(name).map(|c| c.specs.clone()).unwrap_or_default();
        let specs: Vec<&Spec> = specs.iter().collect();
        let coll = open_coll(name, &specs, no_mmap, Some(delta))
            .with_context(|| format!("collection {name}"))?;
        colls.insert(name.to_string(), Arc::new(coll));
        Ok(Catalog {
            colls,
            read_only: self.read_only.clone(),
        })
    }

    pub fn get(&self, name: &str) -> Option<Arc<Coll>> {
        self.colls.get(name).cloned()
    }

    pub fn names(&self) -> Vec<&str> {
        self.colls.keys().map(String::as_str).collect()
    }
}

/// One collection of its specs, over its delta when it is live: the
/// bases are the index specs' paths, or for a delta that a fold folded
/// them into, the base it wrote in their place.
fn open_coll(
    name: &str,
    specs: &[&Spec],
    no_mmap: bool,
    live: Option<Arc<Delta>>,
) -> anyhow::Result<Coll> {
    let given: Vec<PathBuf> = specs
        .iter()
        .filter(|s| s.kind == Kind::Index)
        .map(|s| s.path.clone())
        .collect();
    let bases = match &live {
        Some(d) => d.bases(&given),
        None => given,
    };
    let index_paths: Vec<&Path> = bases.iter().map(PathBuf::as_path).collect();
    let mut map = None;
    let mut acl = None;
    let digest_paths: Vec<&Path> = specs
        .iter()
        .filter(|s| s.kind == Kind::Digests)
        .map(|s| s.path.as_path())
        .collect();
    for s in specs {
        match s.kind {
            Kind::Index | Kind::Digests | Kind::ReadOnly => {}
            Kind::Map if map.is_some() => bail!("more than one map"),
            Kind::Map => map = Some(MapFile::open(&s.path, no_mmap, false)?),
            Kind::Acl if acl.is_some() => bail!("more than one access-rules file"),
            Kind::Acl => {
                let text = std::fs::read(&s.path)
                    .with_context(|| format!("cannot read {}", s.path.display()))?;
                let rules = ukvs::acl::Rules::parse(&text)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", s.path.display()))?;
                acl = Some(rules);
            }
        }
    }
    let (index, labels, surt, value_names) = if index_paths.is_empty() {
        let names = vec!["offset".to_string(), "digest".to_string()];
        (None, Vec::new(), Default::default(), names)
    } else {
        let index = Collection::open(&index_paths, no_mmap)?;
        let labels = source_labels(name, &index_paths, &index);
        let surt = index.surt_options()?;
        let value_names = index.value_names();
        (Some(index), labels, surt, value_names)
    };
    Ok(Coll {
        name: name.to_string(),
        index,
        labels,
        surt,
        value_names,
        map,
        acl,
        digests: match digest_paths.is_empty() {
            true => None,
            false => Some(Collection::open(&digest_paths, no_mmap)?),
        },
        live,
        specs: specs.iter().map(|s| (*s).clone()).collect(),
        bases: bases.clone(),
        archives: Default::default(),
    })
}

/// pywb's `"source"` of each source: the collection's name for a single
/// file or cluster, `NAME:FILE` for each file of a directory, as its
/// directory source names them.
fn source_labels(name: &str, paths: &[&Path], index: &Collection) -> Vec<String> {
    index
        .sources()
        .iter()
        .map(|s| {
            let in_dir = paths
                .iter()
                .any(|p| p.is_dir() && s.path().parent() == Some(p))
                && !s.is_cluster();
            match (in_dir, s.path().file_name()) {
                (true, Some(f)) => format!("{name}:{}", f.to_string_lossy()),
                _ => name.to_string(),
            }
        })
        .collect()
}

//! `ukvs` indexes web archives and works with the sorted indexes it makes.
//!
//! ```text
//! archive files ──► arc::Reader  ──► arc::Record  {header, block}
//!  (.arc .arc.gz     warc::Reader ──► warc::Record {head, block}
//!   .warc .warc.gz       │  member-aware gzip and zstd, exact
//!   .warc.zst)           │  offset/length, resync after damage,
//!                        │  errors with offsets
//!                        ▼
//!              capture::Capture {key, datetime, offset, length, digest, url,
//!                        │        mime, status, filename, extras}
//!                        ▼  (surt::key(url), SHA-1 base32 of the payload)
//!              ukvs::Writer ─► sorted runs ─► sorted::merge ─► index file
//! ```
//!
//! The modules below [`engine`] are leaves that know nothing of files,
//! threads or front ends: parsers take bytes or a `BufRead` and return
//! borrowed views. [`engine`] owns files, memory maps and thread pools and
//! runs whole jobs over them; the binary's front ends (`src/cli/`, the
//! command line, and `src/serve/`, the HTTP CDX server) turn their inputs
//! into engine calls.
//!
//! | module | role |
//! |---|---|
//! | [`surt`] | URL -> canonical URL -> SURT key, byte-identical to Python `surt` 0.3.1 |
//! | [`ukvs`] | the UKVS line model: headers, fields, OSLJ, writer, validation |
//! | [`arc`] | ARC v1/v2 reader, plain and per-record gzip, with damage recovery |
//! | [`warc`] | WARC 1.0/1.1 reader, plain, per-record gzip and zstd, with damage recovery |
//! | [`wacz`] | WACZ packages: the ZIP's entries, the `cdxj-gzip-1.0` index (read and written), `datapackage.json` |
//! | `input` | the readers' shared input buffer and shared (mapped) bytes |
//! | [`kulturarw3`] | Kulturarw3 objects (MIME multipart, concatenated) and the `archive/XX/HOST/SNAPSHOT` tree, with damage recovery |
//! | [`nedlib`] | Nedlib harvests: `.meta` files, their data files, the day tree and `accessK.data` lists |
//! | [`capture`] | ARC and WARC record -> capture record in the `ukvs`, `cdxj` and `cdx11` profiles |
//! | [`digest`] | payload digests in every spelling users have; the digest file's lines (captures keyed by payload digest) |
//! | [`sorted`] | line helpers, binary search, k-way merge, external sort |
//! | [`mementomap`] | MementoMaps: generate, compact, merge, look up, evaluate |
//! | [`acl`] | pywb's access rules (`.aclj`) and the decision they give for a key |
//! | [`stats`] | holdings statistics of index lines: counts, distinct URLs, hosts and domains, reports |
//! | [`engine`] | files, maps, thread pools: indexing, lookups over sources, MementoMap and statistics jobs |

// Two modules use `unsafe` and say why each use holds: `capture::hash` (the
// CPU's SHA instructions) and `engine::fs` (memory maps); a binary search
// in `sorted::search` prefetches. Everything else is safe code.
#![deny(unsafe_code)]

pub mod acl;
pub mod arc;
pub mod capture;
pub mod digest;
pub mod engine;
pub mod http;
mod input;
pub mod kulturarw3;
pub mod mementomap;
pub mod nedlib;
pub mod reader;
pub mod sorted;
pub mod stats;
pub mod surt;
pub mod table;
pub mod ukvs;
pub mod wacz;
pub mod warc;

//! `ukvs` indexes web archives and works with the sorted indexes it makes.
//!
//! ```text
//! archive files ──► arc::Reader ──► arc::Record {header, block}
//!  (.arc .arc.gz)        │  member-aware gzip, exact offset/length,
//!                        │  resync after damage, errors with offsets
//!                        ▼
//!              capture::Capture {key, datetime, offset, length, digest, url,
//!                        │        mime, status, filename, extras}
//!                        ▼  (surt::key(url), SHA-1 base32 of the payload)
//!              ukvs::Writer ─► sorted runs ─► sorted::merge ─► index file
//! ```
//!
//! Every module here is a leaf that knows nothing of files, threads or the
//! command line: parsers take bytes or a `BufRead` and return borrowed views.
//! The binary (`src/main.rs`, `src/cli/`) wires them together.
//!
//! | module | role |
//! |---|---|
//! | [`surt`] | URL -> canonical URL -> SURT key, byte-identical to Python `surt` 0.3.1 |
//! | [`ukvs`] | the UKVS line model: headers, fields, OSLJ, writer, validation |
//! | [`arc`] | ARC v1/v2 reader, plain and per-record gzip, with damage recovery |
//! | [`capture`] | ARC record -> capture record in the `ukvs`, `cdxj` and `cdx11` profiles |
//! | [`sorted`] | line helpers, binary search, k-way merge, external sort |
//! | [`mementomap`] | MementoMaps: generate, compact, merge, look up, evaluate |

// One module, `capture::hash`, uses the CPU's SHA instructions and says why
// each `unsafe` holds; everything else is safe code.
#![deny(unsafe_code)]

pub mod arc;
pub mod capture;
mod input;
pub mod mementomap;
pub mod sorted;
pub mod surt;
pub mod ukvs;
pub mod warc;

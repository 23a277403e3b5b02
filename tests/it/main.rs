//! Integration tests: one binary, one module per area.

mod arc;
mod fuzz;
mod index;
mod mementomap;
mod output;
mod serve;
mod sorted;
mod stats;
mod stats_html;
mod surt;
mod ukvs;
mod util;
mod warc;

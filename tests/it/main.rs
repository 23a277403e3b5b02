//! Integration tests: one binary, one module per area.

mod arc;
mod arc_real;
mod arc_rev3;
mod cdxj_options;
mod dialects;
mod fold;
mod fuzz;
mod index;
mod kulturarw3;
mod live;
mod mementomap;
mod nedlib;
mod output;
mod seed_index;
mod serve;
mod sorted;
mod spark;
mod stats;
mod stats_html;
mod surt;
mod ukvs;
mod util;
mod warc;
mod warc_real;

//! Integration tests: one binary, one module per area.

mod index;
mod sorted;
mod surt;
mod ukvs;
mod arc;
mod mementomap;
mod util;

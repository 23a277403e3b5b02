//! Integration tests: one binary, one module per area.

mod arc;
mod index;
mod mementomap;
mod sorted;
mod surt;
mod ukvs;
mod util;

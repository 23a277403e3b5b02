//! Integration tests: one binary, one module per area.

mod sorted;
mod surt;
mod ukvs;
mod util;

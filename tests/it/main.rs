//! Integration tests: one binary, one module per area.

mod surt;
mod ukvs;
mod util;

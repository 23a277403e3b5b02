//! Integration tests: one binary, one module per area.

mod arc;
mod util;

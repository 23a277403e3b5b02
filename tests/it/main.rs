//! Integration tests: one binary, one module per area.

mod sorted;
mod util;

//! ARC record -> capture record, and its output profiles (`ukvs`, `cdxj`,
//! `cdx11`).

#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ukvs_fuzz::outback_query(data));

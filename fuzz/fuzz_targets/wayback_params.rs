#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ukvs_fuzz::wayback_params(data));

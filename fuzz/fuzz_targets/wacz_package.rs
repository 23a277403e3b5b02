#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ukvs_fuzz::wacz_package(data));

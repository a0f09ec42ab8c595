#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz::Target::ProtocolMessages.run_under_libfuzzer(data);
});

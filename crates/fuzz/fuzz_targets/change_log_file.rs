#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz::Target::ChangeLogFile.run_under_libfuzzer(data);
});

//! Query strings into list, write and delete options.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wasmgate_apimachinery::options::{ListOptions, Query, WriteOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let q = Query::parse(Some(s));
    let _ = ListOptions::from_query(&q);
    let _ = WriteOptions::from_query(&q);
});

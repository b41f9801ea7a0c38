//! Label and field selectors: parsing, and printing what parsed (Go's canonical form)
//! parses again to the same selector.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wasmgate_apimachinery::selectors::{FieldSelector, LabelSelector};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(l) = LabelSelector::parse(s) {
        let again = LabelSelector::parse(&l.to_string()).expect("a printed label selector parses");
        assert_eq!(again.to_string(), l.to_string());
    }
    let _ = FieldSelector::parse(s);
});

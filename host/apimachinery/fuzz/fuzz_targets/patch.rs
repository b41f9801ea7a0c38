//! Strategic merge patch of a ConfigMap-shaped and a Namespace-shaped object: the input
//! is split in two JSON documents (original, patch) at the first NUL byte.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wasmgate_apimachinery::strategic_merge;

fuzz_target!(|data: &[u8]| {
    let Some(split) = data.iter().position(|b| *b == 0) else {
        return;
    };
    let (Ok(original), Ok(patch)) = (
        serde_json::from_slice::<serde_json::Value>(&data[..split]),
        serde_json::from_slice::<serde_json::Value>(&data[split + 1..]),
    ) else {
        return;
    };
    for (av, kind) in [
        ("v1", "ConfigMap"),
        ("v1", "Namespace"),
        ("v1", "ServiceAccount"),
    ] {
        let schema = strategic_merge::builtin_schema(av, kind);
        let _ = strategic_merge::apply(&original, &patch, &schema);
    }
});

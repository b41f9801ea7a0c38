//! Request bodies: JSON (with duplicate-key tracking), YAML, and Kubernetes Protobuf.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wasmgate_apimachinery::{json, protobuf};

fuzz_target!(|data: &[u8]| {
    let _ = json::from_slice(data);
    let _ = json::from_yaml(data);
    let mut framed = protobuf::MAGIC.to_vec();
    framed.extend_from_slice(data);
    let _ = protobuf::decode(&framed);
    let _ = protobuf::decode(data);
});

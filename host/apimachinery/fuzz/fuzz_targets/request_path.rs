//! The request path parser (`RequestInfo`): any method byte and path, watch or not.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&m, rest)) = data.split_first() else {
        return;
    };
    let method = match m % 5 {
        0 => http::Method::GET,
        1 => http::Method::POST,
        2 => http::Method::PUT,
        3 => http::Method::PATCH,
        _ => http::Method::DELETE,
    };
    if let Ok(path) = std::str::from_utf8(rest) {
        let _ = wasmgate_apimachinery::request_info::parse(&method, path, m & 0x80 != 0);
    }
});

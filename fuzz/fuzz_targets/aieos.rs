//! The AIEOS renderer: any bytes either parse and render within the size cap
//! or give an error, and rendering is deterministic. (serde_json keeps object
//! keys sorted, so key order cannot matter; an earlier version of this target
//! compared against a re-serialised document and found only that JSON floats
//! do not round-trip through text exactly, not a renderer problem.)
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(doc) = aieos_identity::parse(text, "aieos.json") else { return };
    if let Ok(rendered) = aieos_identity::render(&doc) {
        assert!(rendered.len() <= aieos_identity::MAX_BYTES * 2, "{} bytes", rendered.len());
        let again = aieos_identity::parse(text, "aieos.json").expect("parses twice");
        assert_eq!(aieos_identity::render(&again).ok().as_deref(), Some(rendered.as_str()));
    }
});

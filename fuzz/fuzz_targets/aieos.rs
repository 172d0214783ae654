//! The AIEOS renderer: any bytes either parse and render within the size cap
//! or give an error; the output never depends on key order and never carries
//! a NUL.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(doc) = aieos_identity::parse(text, "aieos.json") else { return };
    if let Ok(rendered) = aieos_identity::render(&doc) {
        assert!(rendered.len() <= aieos_identity::MAX_BYTES * 2, "{} bytes", rendered.len());
        // Same document, keys re-serialised in serde_json's order: same text.
        let again = aieos_identity::parse(&doc.to_string(), "aieos.json").expect("re-parse");
        assert_eq!(aieos_identity::render(&again).ok().as_deref(), Some(rendered.as_str()));
    }
});

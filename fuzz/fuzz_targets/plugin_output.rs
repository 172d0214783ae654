//! Plugin output validation: any sections or overlay a plugin can return
//! either is refused whole (an error) or becomes sections whose bodies hold
//! no control character but newline and tab, no boundary marker and no
//! reserved tag, within the caps, with ids from the small alphabet.
#![no_main]
use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use proem_core::plugin::hooks::{self, OutputCaps, RawOverlay, RawSection, RawSlot};
use proem_core::section::Zone;

#[derive(Debug, Arbitrary)]
struct RawInput {
    sections: Vec<(String, u8, String, bool, i32, String)>,
    replacements: Vec<(String, String)>,
    prefix: Option<String>,
    suffix: Option<String>,
}

const CAPS: OutputCaps = OutputCaps { max_bytes: 4096, max_items: 8 };

fn check(sections: &[proem_core::section::Section]) {
    for s in sections {
        assert!(hooks::check_id(&s.id).is_ok() || s.id == hooks::STABLE_PREFIX_ID || s.id == hooks::DYNAMIC_SUFFIX_ID);
        assert!(s.body.len() <= CAPS.max_bytes * 4, "neutralising grows a body by a bounded amount");
        assert!(!s.body.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{:?}", s.body);
        assert_eq!(proem_core::text::neutralize(&s.body), s.body, "already neutral");
    }
}

fuzz_target!(|input: RawInput| {
    let anchors = ["identity", "safety", "tooling", "time", "nope"];
    let raw: Vec<RawSection> = input
        .sections
        .into_iter()
        .map(|(id, slot, anchor, dynamic, priority, body)| {
            let anchor = if anchor.len() % 2 == 0 { anchors[anchor.len() % anchors.len()].to_string() } else { anchor };
            RawSection {
                id,
                slot: match slot % 3 {
                    0 => RawSlot::Before(anchor),
                    1 => RawSlot::After(anchor),
                    _ => RawSlot::Replace(anchor),
                },
                zone: if dynamic { Zone::Dynamic } else { Zone::Stable },
                priority,
                modes: Vec::new(),
                body,
                max_tokens: None,
            }
        })
        .collect();
    let mut diagnostics = Vec::new();
    if let Ok(sections) = hooks::validate_sections("fuzz", raw, CAPS, &mut diagnostics) {
        check(&sections);
    }
    let overlay =
        RawOverlay { replacements: input.replacements, stable_prefix: input.prefix, dynamic_suffix: input.suffix };
    if let Ok(sections) = hooks::validate_overlay("fuzz", overlay, CAPS, &mut diagnostics) {
        check(&sections);
    }
});

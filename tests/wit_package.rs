//! The WIT package in wit/ parses and exposes DESIGN.md's shape: package
//! proem:plugin@0.1.0, the six interfaces, every function inside an
//! interface, and the `plugin` world importing host and exporting the rest.

use std::path::Path;
use wit_parser::{Resolve, WorldItem};

#[test]
fn the_plugin_package_has_the_designed_shape() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit/0.1.0");
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve.push_dir(&dir).expect("wit/0.1.0 parses");
    let package = &resolve.packages[pkg];
    assert_eq!(package.name.to_string(), "proem:plugin@0.1.0");
    let mut interfaces: Vec<&str> = package.interfaces.keys().map(String::as_str).collect();
    interfaces.sort_unstable();
    assert_eq!(interfaces, ["bootstrap", "describe", "host", "overlay", "sections", "types"]);
    let funcs = |name: &str| {
        let mut f: Vec<String> = resolve.interfaces[package.interfaces[name]].functions.keys().cloned().collect();
        f.sort();
        f
    };
    assert_eq!(funcs("host"), ["count-tokens", "log"]);
    assert_eq!(funcs("describe"), ["info"]);
    assert_eq!(funcs("sections"), ["contribute"]);
    assert_eq!(funcs("overlay"), ["overlay"]);
    assert_eq!(funcs("bootstrap"), ["on-bootstrap"]);
    let types = &resolve.interfaces[package.interfaces["types"]];
    for t in ["mode", "zone", "tool", "skill", "bootstrap-file", "build-context", "section", "overlay", "plugin-info"] {
        assert!(types.types.contains_key(t), "types lacks {t}");
    }
    // plugin-info carries the capabilities a plugin asks for (granted only by the operator).
    let info = &resolve.types[types.types["plugin-info"]];
    let wit_parser::TypeDefKind::Record(record) = &info.kind else { panic!("plugin-info is a record") };
    let fields: Vec<&str> = record.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(fields, ["id", "version", "hooks", "capabilities"]);
    let world = &resolve.worlds[package.worlds["plugin"]];
    let names = |items: &dyn Fn() -> Vec<(wit_parser::WorldKey, WorldItem)>| {
        let mut n: Vec<String> = items()
            .into_iter()
            .filter(|(_, item)| matches!(item, WorldItem::Interface { .. }))
            .map(|(k, _)| resolve.name_world_key(&k))
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        names(&|| world.imports.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .iter()
            .filter(|n| n.ends_with("/host@0.1.0"))
            .count(),
        1
    );
    let exports = names(&|| world.exports.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    assert_eq!(
        exports,
        [
            "proem:plugin/bootstrap@0.1.0",
            "proem:plugin/describe@0.1.0",
            "proem:plugin/overlay@0.1.0",
            "proem:plugin/sections@0.1.0"
        ]
    );
    // No free functions in the world: everything is versioned through an interface.
    assert!(world.exports.values().chain(world.imports.values()).all(|i| !matches!(i, WorldItem::Function(_))));
}

/// The SDK carries its own copy of the WIT (so `cargo package -p proem-sdk`
/// works); it must be the same bytes as the contract in wit/.
#[test]
fn the_sdks_copy_of_the_wit_is_the_contract() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let contract = std::fs::read(root.join("wit/0.1.0/proem.wit")).unwrap();
    let copy = std::fs::read(root.join("sdk/wit/proem.wit")).unwrap();
    assert!(contract == copy, "sdk/wit/proem.wit differs from wit/0.1.0/proem.wit: copy it over");
}

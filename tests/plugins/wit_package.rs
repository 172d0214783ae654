//! The WIT packages in wit/ parse and keep their shapes: 0.1.0 as DESIGN.md
//! gives it (six interfaces, every function inside an interface, the
//! `plugin` world importing host and exporting the rest), 0.2.0 with the
//! stable/turn split, every item of 0.2.0 documented in the WIT itself.

use std::path::Path;
use wit_parser::{Resolve, WorldItem};

#[test]
fn the_plugin_package_has_the_designed_shape() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit/0.1.0");
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
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let contract = std::fs::read(root.join("wit/0.2.0/proem.wit")).unwrap();
    let copy = std::fs::read(root.join("sdk/wit/proem.wit")).unwrap();
    assert!(contract == copy, "sdk/wit/proem.wit differs from wit/0.2.0/proem.wit: copy it over");
}

fn load(version: &str) -> (Resolve, wit_parser::PackageId) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit").join(version);
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve.push_dir(&dir).unwrap_or_else(|e| panic!("wit/{version} parses: {e}"));
    (resolve, pkg)
}

#[test]
fn the_0_2_package_splits_stable_and_turn_hooks() {
    let (resolve, pkg) = load("0.2.0");
    let package = &resolve.packages[pkg];
    assert_eq!(package.name.to_string(), "proem:plugin@0.2.0");
    let mut interfaces: Vec<&str> = package.interfaces.keys().map(String::as_str).collect();
    interfaces.sort_unstable();
    assert_eq!(interfaces, ["bootstrap", "describe", "host", "stable", "turn", "types"]);
    let fields = |ty: &str| -> Vec<String> {
        let types = &resolve.interfaces[package.interfaces["types"]];
        let wit_parser::TypeDefKind::Record(r) = &resolve.types[types.types[ty]].kind else { panic!("{ty}") };
        r.fields.iter().map(|f| f.name.clone()).collect()
    };
    // The stable hooks' context has no clock, channel, chat or extra prompt.
    let agent = fields("agent-context");
    for per_turn in ["now", "channel", "chat-kind", "group-title", "extra", "files", "timezone"] {
        assert!(!agent.iter().any(|f| f == per_turn), "agent-context has {per_turn}");
    }
    let turn = fields("turn-context");
    for f in ["now", "channel", "chat-kind", "group-title", "extra", "files"] {
        assert!(turn.iter().any(|t| t == f), "turn-context lacks {f}");
    }
    // Sections carry no zone (the hook decides) and may carry a token hint.
    let section = fields("section");
    assert!(!section.iter().any(|f| f == "zone") && section.iter().any(|f| f == "max-tokens"), "{section:?}");
    let world = &resolve.worlds[package.worlds["plugin"]];
    let mut exports: Vec<String> = world.exports.keys().map(|k| resolve.name_world_key(k)).collect();
    exports.sort();
    assert_eq!(
        exports,
        [
            "proem:plugin/bootstrap@0.2.0",
            "proem:plugin/describe@0.2.0",
            "proem:plugin/stable@0.2.0",
            "proem:plugin/turn@0.2.0"
        ]
    );
}

/// Item by item: every interface, type, field, case, flag and function of
/// 0.2.0 has a doc comment in the WIT (what authors read first).
#[test]
fn every_item_of_the_0_2_wit_is_documented() {
    let (resolve, pkg) = load("0.2.0");
    let package = &resolve.packages[pkg];
    let mut missing = Vec::new();
    let mut need = |what: String, docs: &wit_parser::Docs| {
        if docs.contents.as_deref().is_none_or(|d| d.trim().is_empty()) {
            missing.push(what);
        }
    };
    for (name, id) in &package.interfaces {
        let iface = &resolve.interfaces[*id];
        need(format!("interface {name}"), &iface.docs);
        for (fname, f) in &iface.functions {
            need(format!("{name}.{fname}"), &f.docs);
        }
        for (tname, tid) in &iface.types {
            let ty = &resolve.types[*tid];
            if matches!(ty.kind, wit_parser::TypeDefKind::Type(_)) {
                continue; // a `use` of another interface's type
            }
            need(format!("{name}.{tname}"), &ty.docs);
            match &ty.kind {
                wit_parser::TypeDefKind::Record(r) => {
                    r.fields.iter().for_each(|f| need(format!("{tname}.{}", f.name), &f.docs))
                }
                wit_parser::TypeDefKind::Enum(e) => {
                    e.cases.iter().for_each(|c| need(format!("{tname}.{}", c.name), &c.docs))
                }
                wit_parser::TypeDefKind::Variant(v) => {
                    v.cases.iter().for_each(|c| need(format!("{tname}.{}", c.name), &c.docs))
                }
                wit_parser::TypeDefKind::Flags(fl) => {
                    fl.flags.iter().for_each(|c| need(format!("{tname}.{}", c.name), &c.docs))
                }
                _ => {}
            }
        }
    }
    for (name, id) in &package.worlds {
        need(format!("world {name}"), &resolve.worlds[*id].docs);
    }
    assert!(missing.is_empty(), "undocumented in wit/0.2.0: {missing:?}");
}

//! Denied stubs: imports that common toolchains add to every component and
//! a plugin never needs, linked so that a default build loads, with every
//! call denied.
//!
//! componentize-js (StarlingMonkey) imports `wasi:http/types` and
//! `wasi:http/outgoing-handler` for `fetch` whether the code uses it or
//! not; without them the component would not link at all ("instance export
//! `fields` has the wrong type: resource implementation is missing"). proem
//! gives plugins no network, so these interfaces are linked as stubs: each
//! resource is a type no value of which is ever made, each function traps
//! with a message naming it ([`DENIED`]), and the call that reached it
//! fails like any trapping plugin (left out of that build with the message
//! as its diagnostic; the build goes on). A stub adds no capability: there
//! is nothing behind it.
//!
//! The other interfaces those toolchains add are wasmtime-wasi's, with the
//! sandbox's policy denying what they would reach ([`POLICY_DENIED`]):
//! sockets refuse every address and lookup (`access-denied`), the
//! environment is empty, `exit` ends the call as a failure, there is no
//! terminal and stdin is empty. `proem plugin check` lists both kinds.
//!
//! Only the interfaces named in [`STUBBED`] are ever stubbed, and only
//! what the linker lacks of them: anything else a component imports is
//! refused by [`crate::binary::check`] before compiling, naming the import.

use crate::sandbox::State;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker, ResourceType};
use wasmtime::Engine;

/// Interface name prefixes linked as denied stubs when a component imports
/// them, with what a call does.
pub const STUBBED: &[(&str, &str)] = &[("wasi:http/", "no network: every call traps")];

/// Interface name prefixes wasmtime-wasi provides whose every call the
/// sandbox's policy denies, with what a call gets.
pub const POLICY_DENIED: &[(&str, &str)] = &[
    ("wasi:sockets/", "no network: every socket, connection and name lookup is refused (access-denied)"),
    ("wasi:cli/environment", "no variables, arguments or working directory"),
    ("wasi:cli/exit", "exit ends the call as a failure"),
    ("wasi:cli/terminal-", "no terminal"),
    ("wasi:cli/stdin", "empty"),
];

/// The error a denied stub's call ends with: its text names the import and
/// says [`DENIED`]; its type is how the call is told apart from other traps.
#[derive(Debug)]
pub struct DeniedStub(pub String);

impl std::fmt::Display for DeniedStub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeniedStub {}

/// What every stubbed function's trap says (after the import's name).
pub const DENIED: &str = "is a denied stub in proem's sandbox (plugins have no network)";

/// The stub resources' host type: never constructed, so no handle of it exists.
struct DeniedResource;

/// How a call to an import named `name` (an interface) is denied, if it is
/// stubbed or denied by policy.
pub fn denial(name: &str) -> Option<&'static str> {
    STUBBED.iter().chain(POLICY_DENIED).find(|(prefix, _)| name.starts_with(prefix)).map(|(_, how)| *how)
}

/// Whether `name` is an interface linked as a stub.
pub fn is_stubbed(name: &str) -> bool {
    STUBBED.iter().any(|(prefix, _)| name.starts_with(prefix))
}

/// `linker` with stubs for the [`STUBBED`] interfaces `component` imports,
/// or `None` when it imports none (the shared linker serves as it is).
pub fn linker_for(
    engine: &Engine,
    linker: &Linker<State>,
    component: &Component,
) -> wasmtime::Result<Option<Linker<State>>> {
    let ty = component.component_type();
    let imports: Vec<(&str, ComponentItem)> = ty.imports(engine).map(|(name, import)| (name, import.ty)).collect();
    if !imports.iter().any(|(name, _)| is_stubbed(name)) {
        return Ok(None);
    }
    // Resources the component imports from interfaces proem provides (or
    // stubs earlier): a stubbed interface that names one (`use
    // wasi:io/streams.{input-stream}`) refers to that type, which it must
    // not redefine.
    let mut known: Vec<ResourceType> = Vec::new();
    let mut linker = linker.clone();
    for (name, item) in &imports {
        let ComponentItem::ComponentInstance(instance) = item else { continue };
        if !is_stubbed(name) {
            known.extend(instance.exports(engine).filter_map(|(_, export)| match export.ty {
                ComponentItem::Resource(resource) => Some(resource),
                _ => None,
            }));
            continue;
        }
        let mut stubs = linker.instance(name)?;
        for (export, item) in instance.exports(engine) {
            match item.ty {
                ComponentItem::Resource(resource) if known.contains(&resource) => {}
                ComponentItem::Resource(resource) => {
                    known.push(resource);
                    stubs.resource(export, ResourceType::host::<DeniedResource>(), |_, _| Ok(()))?;
                }
                ComponentItem::ComponentFunc(_) => {
                    let message = format!("{name}#{export} {DENIED}");
                    stubs.func_new(export, move |_, _, _, _| Err(wasmtime::Error::new(DeniedStub(message.clone()))))?;
                }
                _ => {}
            }
        }
    }
    Ok(Some(linker))
}

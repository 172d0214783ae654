//! The compiled-component cache entry's integrity rule (docs/SECURITY.md,
//! "Caches"): the MAC covers a header that binds the wasm digest, the
//! engine, and the machine code's length and xxh3-128, so a read costs one
//! xxh3 pass over the code instead of a SHA-256 one, and still no changed
//! byte anywhere in an entry is ever handed to wasmtime.

use proem_core::cache_dir::CacheDir;
use proem_wasm::cache::{decode_entry, encode_entry, EntryKey};
use proptest::prelude::*;

fn key(seed: u8) -> EntryKey {
    EntryKey { wasm: [seed; 32], engine: 0x5eed_0000 + u64::from(seed) }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Exactly what `encode_entry` wrote for a key under this folder's
    /// secret decodes, to its payload; any byte changed anywhere (header,
    /// MAC or code), any truncation or extension, another key, or another
    /// folder's secret is refused.
    #[test]
    fn an_entry_decodes_only_as_written_for_its_key_and_folder(
        payload in proptest::collection::vec(any::<u8>(), 0..4096),
        at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
        cut in any::<prop::sample::Index>(),
        extra in proptest::collection::vec(any::<u8>(), 1..16),
    ) {
        let (ours, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (dir, other) = (CacheDir::open(ours.path()).unwrap(), CacheDir::open(theirs.path()).unwrap());
        let entry = encode_entry(&dir, &key(1), &payload);
        prop_assert_eq!(decode_entry(&dir, &key(1), &entry), Some(&payload[..]));
        let mut changed = entry.clone();
        changed[at.index(entry.len())] ^= flip;
        prop_assert_eq!(decode_entry(&dir, &key(1), &changed), None, "a changed byte was accepted");
        prop_assert_eq!(decode_entry(&dir, &key(1), &entry[..cut.index(entry.len())]), None, "a truncation");
        let longer = [&entry[..], &extra[..]].concat();
        prop_assert_eq!(decode_entry(&dir, &key(1), &longer), None, "an extension");
        prop_assert_eq!(decode_entry(&dir, &key(2), &entry), None, "another binary's entry");
        prop_assert_eq!(decode_entry(&other, &key(1), &entry), None, "another folder's entry");
    }
}

/// A process that lives on (`proem serve`) copies each compiled entry it
/// loads, so the entry rewritten in place afterwards (truncated, or written
/// over as `cp` restoring a backup does) changes nothing it runs: every
/// later build that calls the plugin answers, equal to the same build with
/// caches off. (A one-shot build maps the entry instead: see
/// proem_wasm::cache::map_entries_in_this_process.)
#[test]
fn an_entry_rewritten_in_place_under_a_running_server_changes_nothing_it_runs() {
    use crate::common::*;
    use crate::surfaces::serve::{client, runtime, Server};
    plugin_env();
    let cache = tempfile::tempdir().unwrap();
    let agent = Agent::with_plugins(&fixture("fix", "sections", "zone = \"dynamic\""));
    // `proem serve` takes an agent's id from its folder's name.
    let parent = tempfile::tempdir().unwrap();
    let agent = {
        let to = parent.path().join("testbot");
        crate::surfaces::serve::copy_dir(agent.path(), &to);
        to
    };
    // The entry is made before the server starts, so the server loads it
    // (rather than compiling the plugin itself).
    let filled = std::process::Command::new(front())
        .args(["build", agent.to_str().unwrap()])
        .env("PROEM_CACHE_DIR", cache.path())
        .output()
        .unwrap();
    assert!(filled.status.success(), "{}", String::from_utf8_lossy(&filled.stderr));
    let server = Server::start_with(&[agent.to_str().unwrap()], |c| {
        c.env("PROEM_CACHE_DIR", cache.path());
    });
    let url = format!("{}/v1/agents/testbot/build", server.url);
    let (rt, http) = (runtime(), client());
    // Each minute is a new turn: the turn hook runs, from the loaded code.
    let build = |minute: u32| {
        let body = serde_json::json!({"now": format!("2026-11-21T09:{minute:02}:00Z")});
        rt.block_on(async {
            let response = http.post(&url).json(&body).send().await.expect("the server answers");
            (response.status().as_u16(), response.text().await.unwrap())
        })
    };
    let uncached = |minute: u32| {
        let out = std::process::Command::new(front())
            .args(["build", agent.to_str().unwrap(), "--now", &format!("2026-11-21T09:{minute:02}:00Z")])
            .env("PROEM_CACHE_DIR", "")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(build(0), (200, uncached(0)));
    let entries: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert!(!entries.is_empty(), "the server compiled its plugin into the cache");
    let mut minute = 1;
    for (what, rewrite) in [
        ("truncated to half", 0usize),
        ("truncated to nothing", 1),
        ("written over with other bytes of the same size", 2),
    ] {
        for entry in &entries {
            let len = std::fs::metadata(entry).unwrap().len();
            // In place, as `truncate` and `cp` do: the same inode.
            let file = std::fs::OpenOptions::new().write(true).open(entry).unwrap();
            match rewrite {
                0 => file.set_len(len / 2).unwrap(),
                1 => file.set_len(0).unwrap(),
                _ => {
                    file.set_len(0).unwrap();
                    std::io::Write::write_all(&mut &file, &vec![0xcc; len as usize]).unwrap();
                }
            }
        }
        for _ in 0..2 {
            assert_eq!(build(minute), (200, uncached(minute)), "after the entry was {what}");
            minute += 1;
        }
    }
}

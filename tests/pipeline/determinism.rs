//! Same inputs, same bytes: the prompt does not depend on the order of tools,
//! skills, configured files, or the order files were created on disk.

use crate::common::*;
use proem::{Tool, Turn};

/// Every permutation of `items` (Heap's algorithm).
fn permutations<T: Clone>(items: &[T]) -> Vec<Vec<T>> {
    fn heap<T: Clone>(k: usize, a: &mut Vec<T>, out: &mut Vec<Vec<T>>) {
        if k <= 1 {
            out.push(a.clone());
            return;
        }
        for i in 0..k {
            heap(k - 1, a, out);
            let j = if k.is_multiple_of(2) { i } else { 0 };
            a.swap(j, k - 1);
        }
    }
    let mut a = items.to_vec();
    let mut out = Vec::new();
    heap(a.len(), &mut a, &mut out);
    out
}

#[test]
fn every_permutation_of_tools_gives_the_same_prompt() {
    let agent = Agent::new();
    agent.with_standard_files();
    let names = ["exec", "Read", "read", "web_fetch", "gpio_write", "memory_search"];
    let base: Vec<Tool> = tools(&names);
    let perms = permutations(&base);
    assert_eq!(perms.len(), 720);
    let assembler = agent.assembler();
    let first = assembler.build(&Turn { tools: Some(perms[0].clone().into()), ..turn() }).unwrap();
    for p in &perms[1..] {
        let b = assembler.build(&Turn { tools: Some(p.clone().into()), ..turn() }).unwrap();
        assert_eq!(b.prompt, first.prompt);
        assert_eq!(b.stable_hash, first.stable_hash);
    }
}

#[test]
fn skills_and_files_created_in_any_order_give_the_same_prompt() {
    let skills =
        [("weather", "Forecasts"), ("git-release", "Tags"), ("Alpha", "First"), ("zulu", "Last"), ("mid", "Middle")];
    let extras = ["notes/b.md", "a.md", "notes/a.md", "z.md"];
    let mut prompts = Vec::new();
    for (n, order) in permutations(&[0usize, 1, 2, 3, 4]).into_iter().step_by(7).enumerate() {
        let agent = Agent::new();
        // Files written in a different order each time, extra files listed in a different order.
        for &i in &order {
            let (name, desc) = skills[i];
            agent.skill(name, desc);
        }
        let mut listed: Vec<&str> = extras.to_vec();
        listed.rotate_left(n % extras.len());
        for (i, e) in listed.iter().enumerate() {
            agent.file(e, &format!("extra file {e}"));
            if i % 2 == 0 {
                agent.with_standard_files();
            }
        }
        let list = listed.iter().map(|e| format!("\"{e}\"")).collect::<Vec<_>>().join(", ");
        agent.config(&format!(
            "[agent]\nid = \"testbot\"\n[sandbox]\nenabled = true\nworkdir = \"/workspace\"\n[bootstrap]\nextra_files = [{list}]\n"
        ));
        prompts.push(agent.build(&turn()).prompt);
    }
    assert!(prompts.len() >= 15);
    assert!(prompts.iter().all(|p| p == &prompts[0]));
    // Extra files appear sorted by path, after the standard files.
    let p = &prompts[0];
    let pos: Vec<usize> = ["### MEMORY.md", "### a.md", "### notes/a.md", "### notes/b.md", "### z.md"]
        .iter()
        .map(|h| p.find(h).unwrap())
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{pos:?}");
}

#[test]
fn repeated_builds_are_byte_identical() {
    let agent = Agent::new();
    agent.with_standard_files().skill("s", "d");
    let a = agent.assembler();
    let first = serde_json::to_string(&a.build(&turn()).unwrap()).unwrap();
    for _ in 0..20 {
        let again = serde_json::to_string(&a.build(&turn()).unwrap()).unwrap();
        assert_eq!(again, first);
    }
}

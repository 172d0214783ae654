//! Round three's in-process figures (issue 31), on a held-out-like
//! workspace: ~94 KB of markdown, 30 tools, 24 skills and two official
//! plugins, made from `examples/atlas` by [`make_workspace`].
//!
//! ```sh
//! cargo run --release --locked -p proem-full --example round3 -- make target/round3/agent
//! cargo run --release --locked -p proem-full --example round3 -- builds target/round3/agent new-day 3000
//! ```
//!
//! `make DIR` writes the workspace to DIR and the same without plugins to
//! DIR-bare. `builds DIR CASE N` times N builds after 100 warm-up ones and
//! prints p50/p99 of wall time and the process's CPU time (user+sys, every
//! thread, from getrusage) per build, through `Assembler::build_shared`
//! (what `proem serve` and the Python and Node packages call; `owned` as a
//! fifth argument calls `Assembler::build`, which copies a build the memo
//! keeps). CASE is one of `new-day` (the date
//! changes every build, so the build memo misses: the "new clock" figure),
//! `new-second` (same day, a new second: a memo hit when no hook sees the
//! clock), `same` (the same turn), `re-read` (build memo off: every file
//! read again), `all-off` (every cache off). Caches go to
//! target/proem-bench/cache, as for the build bench.

use proem::{Assembler, Caching, Turn};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn main() {
    proem_core::allocator::tune(); // as the proem binary does
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cache = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/proem-bench/cache");
    std::fs::create_dir_all(&cache).expect("target/proem-bench/cache");
    // SAFETY of set_var: single-threaded here, before any plugin runs.
    std::env::set_var("PROEM_CACHE_DIR", &cache);
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["make", dir] => make_workspace(Path::new(dir)),
        ["builds", dir, case, n] => builds(Path::new(dir), case, n.parse().expect("N: a count of builds"), "shared"),
        ["builds", dir, case, n, api @ ("shared" | "owned")] => {
            builds(Path::new(dir), case, n.parse().expect("N: a count of builds"), api)
        }
        _ => {
            eprintln!(
                "usage: round3 make DIR | round3 builds DIR new-day|new-second|same|re-read|all-off N [shared|owned]"
            );
            std::process::exit(2);
        }
    }
}

/// The held-out-like workspace: atlas without aieos-identity (two official
/// plugins: hardware-access and gpt5-overlay), PROJECTS.md padded so the
/// markdown totals 94,000 bytes; and DIR-bare, the same with no plugins.
fn make_workspace(dir: &Path) {
    let atlas = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/atlas");
    for (target, plugins) in [(dir.to_path_buf(), true), (bare(dir), false)] {
        let _ = std::fs::remove_dir_all(&target);
        copy_tree(&atlas, &target);
        std::fs::remove_file(target.join("atlas.aieos.json")).expect("atlas.aieos.json");
        let config = std::fs::read_to_string(atlas.join("proem.toml")).expect("atlas/proem.toml");
        let cut = match plugins {
            true => config.find("# The persona comes").expect("the aieos-identity block"),
            false => config.find("[[plugins]]").expect("a [[plugins]] block"),
        };
        std::fs::write(target.join("proem.toml"), &config[..cut]).expect("proem.toml");
        let mut markdown = markdown_bytes(&target);
        let mut projects = std::fs::read_to_string(target.join("PROJECTS.md")).expect("PROJECTS.md");
        let mut n = 0;
        while markdown < 94_000 {
            n += 1;
            let entry = format!(
                "\n## Held-out project {n}\n\nJig for batch {n}: walnut offcuts, two clamps, sanding to 240 grit; \
                 owner Priya, due the week after the market.\n"
            );
            markdown += entry.len();
            projects.push_str(&entry);
        }
        std::fs::write(target.join("PROJECTS.md"), projects).expect("PROJECTS.md");
        println!("{}: {} bytes of markdown", target.display(), markdown_bytes(&target));
    }
}

fn bare(dir: &Path) -> PathBuf {
    PathBuf::from(format!("{}-bare", dir.display()))
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the workspace");
    let mut entries: Vec<_> = std::fs::read_dir(from).expect("read atlas").map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for path in entries {
        let dest = to.join(path.file_name().expect("a name"));
        if path.is_dir() {
            copy_tree(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).expect("copy");
        }
    }
}

fn markdown_bytes(dir: &Path) -> usize {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).expect("read the workspace") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            total += markdown_bytes(&path);
        } else if path.extension().is_some_and(|e| e == "md") {
            total += std::fs::metadata(&path).expect("stat").len() as usize;
        }
    }
    total
}

/// The reference turn: the workspace's 30 tools, a Telegram group, a fixed clock.
fn reference_turn(dir: &Path) -> Turn {
    let file = dir.join("tools.json");
    let tools = proem_core::turn::parse_tools(&std::fs::read_to_string(&file).expect("tools.json"), &file)
        .expect("tools.json parses");
    assert_eq!(tools.len(), 30, "the workspace has 30 tools");
    Turn {
        channel: Some("telegram".into()),
        chat_kind: Some(proem::ChatKind::Group),
        group_title: Some("Workshop crew".into()),
        tools: Some(tools.into()),
        now: Some(proem_core::turn::parse_now("2026-11-21T09:30:00Z").expect("a clock")),
        timezone: Some("Europe/Berlin".into()),
        ..Turn::default()
    }
}

fn builds(dir: &Path, case: &str, n: usize, api: &str) {
    let caching = match case {
        "new-day" | "new-second" | "same" => Caching::default(),
        "re-read" => Caching { builds: false, ..Caching::default() },
        "all-off" => Caching::NONE,
        other => panic!("unknown case {other}: new-day, new-second, same, re-read or all-off"),
    };
    let mut assembler = Assembler::open(dir, None).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    assembler.set_caching(caching);
    let mut turn = reference_turn(dir);
    let start = turn.now.expect("a clock");
    let step = |i: usize| match case {
        "new-day" => chrono::Duration::days(i as i64),
        "new-second" => chrono::Duration::seconds((i % 3600) as i64),
        _ => chrono::Duration::zero(),
    };
    let build = |turn: &Turn| match api {
        "owned" => drop(std::hint::black_box(assembler.build(turn).expect("a build"))),
        _ => drop(std::hint::black_box(assembler.build_shared(turn).expect("a build"))),
    };
    for i in 0..100 {
        turn.now = Some(start + step(i));
        build(&turn);
    }
    let cpu_before = cpu_time();
    let mut wall = Vec::with_capacity(n);
    for i in 0..n {
        turn.now = Some(start + step(100 + i));
        let begin = Instant::now();
        build(&turn);
        wall.push(begin.elapsed());
    }
    let cpu = (cpu_time() - cpu_before) / n as u32;
    wall.sort();
    let at = |q: f64| wall[((wall.len() - 1) as f64 * q).round() as usize];
    println!(
        "{} {case} x{n} ({api}): wall p50 {:.1} µs, p99 {:.1} µs; CPU (user+sys, all threads) {:.1} µs per build; memo hits {}",
        dir.display(),
        micros(at(0.5)),
        micros(at(0.99)),
        micros(cpu),
        assembler.memo_hits()
    );
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// User plus system CPU time of this process (every thread).
fn cpu_time() -> Duration {
    // SAFETY: a zeroed rusage is a valid value, and getrusage writes into
    // this one through a valid pointer.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

//! proem's benchmarks: every figure in docs/PERFORMANCE.md.
//!
//! `cargo bench -p proem-full --bench build` (release build of the library
//! and the `proem` binary). Prints a Markdown report and writes it, with one
//! SVG plot per sweep, to `target/proem-bench/`. The reference workload is
//! `examples/atlas` (~92 KB of markdown, 30 tools, 24 skills, the three
//! official plugins). Caches live in `target/proem-bench/cache`, never in the
//! user's ~/.cache. `PROEM_BENCH_QUICK=1` runs a tenth of the iterations.

use proem::{Assembler, Config, Turn};
use proem_core::memo::Caching;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    proem_core::allocator::tune(); // as the proem binary does
    let out_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/proem-bench");
    let cache = out_dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    // SAFETY of set_var: single-threaded here, before any plugin or tokenizer runs.
    std::env::set_var("PROEM_CACHE_DIR", &cache);
    let quick = std::env::var_os("PROEM_BENCH_QUICK").is_some();
    let n = |full: usize| if quick { (full / 10).max(5) } else { full };
    let atlas = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/atlas");
    let mut report = String::new();
    let mut line = |s: String| {
        println!("{s}");
        report.push_str(&s);
        report.push('\n');
    };
    line(format!("# proem benchmarks\n\nmachine: {}\n", machine()));

    // ------------------------------------------------------------ processes
    // First, while this process is small: a child's peak RSS as wait4 reports
    // it can include the parent's pages from before its exec.
    let front = PathBuf::from(env!("CARGO_BIN_EXE_proem-full")).with_file_name("proem");
    let proem = front.to_str().expect("a UTF-8 target path");
    let turn = reference_turn(&atlas);
    line("## Whole `proem build` processes (examples/atlas)\n".into());
    line("| figure | p50 | p99 | peak RSS (max) |\n|---|---|---|---|".into());
    let args = ["build", atlas.to_str().unwrap(), "--now", "2026-11-21T09:30:00Z"];
    run_process(proem, &args, &cache); // fill the caches
    let warm = (0..n(40)).map(|_| run_process(proem, &args, &cache)).collect::<Vec<_>>();
    line(process_row("warm caches (components, token counts, plugin answers)", &warm));
    // The same build by the executable with wasmtime linked (what `proem`
    // was before it handed plugin runs to it; src/cli.rs).
    let full = env!("CARGO_BIN_EXE_proem-full");
    run_process(full, &args, &cache); // its own plugin answers
    let warm_full = (0..n(40)).map(|_| run_process(full, &args, &cache)).collect::<Vec<_>>();
    line(process_row("warm caches, `proem-full` (wasmtime linked)", &warm_full));
    let first = (0..n(10).min(10))
        .map(|i| {
            let fresh = out_dir.join(format!("first-run-{i}"));
            let _ = std::fs::remove_dir_all(&fresh);
            let r = run_process(proem, &args, &fresh);
            let _ = std::fs::remove_dir_all(&fresh);
            r
        })
        .collect::<Vec<_>>();
    line(process_row("very first run (compiles the 3 plugins, empty cache)", &first));
    let off = (0..n(10)).map(|_| run_process(proem, &args, Path::new(""))).collect::<Vec<_>>();
    line(process_row("no cache at all (PROEM_CACHE_DIR=\"\")", &off));

    // ------------------------------------------------------------ in process
    line("\n## Builds in one process (examples/atlas, the 3 official plugins, 24,000-token budget)\n".into());
    line("| figure | caches | p50 | p99 | mean |\n|---|---|---|---|---|".into());
    let re_read = Caching { builds: false, ..Caching::default() };
    let cases: [(&str, Caching, bool); 9] = [
        ("warm rebuild, unchanged files", Caching::default(), false),
        ("warm rebuild, unchanged files", re_read, false),
        ("warm rebuild, a new clock every build", Caching::default(), true),
        ("warm rebuild, unchanged files", Caching { plugin_outputs: false, ..re_read }, false),
        ("warm rebuild, unchanged files", Caching::NONE, false),
        ("warm rebuild, a new clock every build", re_read, true),
        ("warm rebuild, unchanged files", Caching { file_events: false, ..Caching::default() }, false),
        ("warm rebuild, unchanged files", Caching { file_events: false, ..re_read }, false),
        ("warm rebuild, unchanged files", Caching { file_events: false, prepared_tools: false, ..re_read }, false),
    ];
    let mut with_plugins = Vec::new();
    for (what, caching, new_clock) in cases {
        let mut assembler = Assembler::open(&atlas, None).unwrap();
        assembler.set_caching(caching);
        let iters = n(if caching == Caching::NONE { 1000 } else { 3000 });
        let (s, warm_up) = time_builds_and_warm_up(&assembler, &turn, iters, new_clock);
        with_plugins.push(s);
        line(format!("| {what} | {} | {} | {} | {} |", describe(caching), us(s.p50), us(s.p99), us(s.mean)));
        if caching == Caching::NONE {
            line(format!(
                "| the same, its {WARM_UP_BUILDS} warm-up builds (the threads settling) | all off | {} | {} | {} |",
                us(warm_up.p50),
                us(warm_up.p99),
                us(warm_up.mean)
            ));
        }
    }
    let mut no_plugins_config = Config::load(&atlas.join("proem.toml")).unwrap();
    no_plugins_config.plugins.clear();
    let mut without = Vec::new();
    for caching in [Caching::default(), Caching { builds: false, ..Caching::default() }, Caching::NONE] {
        let mut assembler = Assembler::with_config(&atlas, no_plugins_config.clone()).unwrap();
        assembler.set_caching(caching);
        let iters = n(if caching == Caching::NONE { 1000 } else { 3000 });
        let (s, _) = time_builds_and_warm_up(&assembler, &turn, iters, false);
        without.push(s);
        line(format!(
            "| same build without plugins | {} | {} | {} | {} |",
            describe(caching),
            us(s.p50),
            us(s.p99),
            us(s.mean)
        ));
    }
    line(format!(
        "\nplugins cost (p50 with the 3 plugins / p50 without): all caches {:.2}x, build memo off {:.2}x, all off {:.2}x\n",
        ratio(with_plugins[0], without[0]),
        ratio(with_plugins[1], without[1]),
        ratio(with_plugins[4], without[2]),
    ));

    // ------------------------------------------------------------ memory
    line("\n## Memory in one process\n".into());
    let mut assembler = Assembler::open(&atlas, None).unwrap();
    assembler.set_caching(Caching::default());
    let mut t = turn.clone();
    let start = t.now.unwrap();
    let mut rss_at = Vec::new();
    let total = n(10_000);
    for i in 0..total {
        // A new clock every build: the memos are filled and evicted all along.
        t.now = Some(start + chrono::Duration::seconds(i as i64));
        assembler.build(&t).unwrap();
        if (i + 1) % (total / 10) == 0 {
            rss_at.push((i + 1, rss_kib()));
        }
    }
    line(format!(
        "{} builds, a new clock each: RSS {} after {} builds, {} after {} (growth {} KiB); peak {} KiB\n",
        total,
        kib(rss_at[0].1),
        rss_at[0].0,
        kib(rss_at.last().unwrap().1),
        rss_at.last().unwrap().0,
        rss_at.last().unwrap().1 as i64 - rss_at[0].1 as i64,
        peak_kib()
    ));

    // ------------------------------------------------------------ sweeps
    line("## Scaling: workspace size (markdown in MEMORY.md, all of it in the prompt)\n".into());
    line("| markdown | warm (all caches) p50 | re-read (build memo off) p50 | cold (all caches off) p50 |\n|---|---|---|---|".into());
    let mut size_points = Vec::new();
    for kb in [10usize, 30, 100, 300, 1000] {
        let dir = tempfile::tempdir().unwrap();
        sized_agent(dir.path(), kb * 1024);
        let mut row = Vec::new();
        for (caching, iters) in [
            (Caching::default(), 500),
            (Caching { builds: false, ..Caching::default() }, 200),
            (Caching::NONE, if kb >= 300 { 10 } else { 40 }),
        ] {
            let mut a = Assembler::open(dir.path(), None).unwrap();
            a.set_caching(caching);
            row.push(time_builds(&a, &turn_without_tools(), n(iters), false).p50);
        }
        line(format!("| {kb} KB | {} | {} | {} |", us(row[0]), us(row[1]), us(row[2])));
        size_points.push((kb as f64, row));
    }
    write_svg(
        &out_dir.join("scaling-workspace.svg"),
        "Build time vs workspace size",
        "KB of markdown",
        ["warm (all caches)", "re-read (build memo off)", "cold (all caches off)"],
        &size_points,
    );

    line("\n## Scaling: plugin count (copies of hardware-access, examples/atlas files)\n".into());
    line("| plugins | warm (all caches) p50 | re-read (build memo off) p50 | plugins run every build p50 |\n|---|---|---|---|".into());
    let mut plugin_points = Vec::new();
    for count in [0usize, 1, 2, 5, 10, 20] {
        let mut config = Config::load(&atlas.join("proem.toml")).unwrap();
        let template = config.plugins[0].clone();
        config.plugins = (0..count)
            .map(|i| {
                let mut p = template.clone();
                p.id = format!("hw-{i:02}");
                p
            })
            .collect();
        let mut row = Vec::new();
        for caching in [
            Caching::default(),
            Caching { builds: false, ..Caching::default() },
            Caching { builds: false, plugin_outputs: false, ..Caching::default() },
        ] {
            let mut a = Assembler::with_config(&atlas, config.clone()).unwrap();
            a.set_caching(caching);
            row.push(time_builds(&a, &turn, n(300), false).p50);
        }
        line(format!("| {count} | {} | {} | {} |", us(row[0]), us(row[1]), us(row[2])));
        plugin_points.push((count as f64, row));
    }
    write_svg(
        &out_dir.join("scaling-plugins.svg"),
        "Build time vs plugin count",
        "plugins",
        ["warm (all caches)", "re-read (build memo off)", "plugins run every build"],
        &plugin_points,
    );
    std::fs::write(out_dir.join("report.md"), &report).unwrap();
    println!("\nwritten: {}", out_dir.join("report.md").display());
}

/// The reference turn: atlas's tools, a Telegram group, a fixed clock.
fn reference_turn(atlas: &Path) -> Turn {
    let tools = proem_core::turn::parse_tools(
        &std::fs::read_to_string(atlas.join("tools.json")).unwrap(),
        &atlas.join("tools.json"),
    )
    .unwrap();
    assert_eq!(tools.len(), 30);
    Turn {
        channel: Some("telegram".into()),
        chat_kind: Some(proem::ChatKind::Group),
        group_title: Some("Workshop crew".into()),
        tools: Some(tools.into()),
        now: Some(proem_core::turn::parse_now("2026-11-21T09:30:00Z").unwrap()),
        timezone: Some("Europe/Berlin".into()),
        ..Turn::default()
    }
}

fn turn_without_tools() -> Turn {
    Turn { now: Some(proem_core::turn::parse_now("2026-11-21T09:30:00Z").unwrap()), ..Turn::default() }
}

#[derive(Debug, Clone, Copy)]
struct Stats {
    p50: Duration,
    p99: Duration,
    mean: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    Stats { p50: at(0.5), p99: at(0.99), mean }
}

/// Builds run before the timed ones. A process's plugin threads take
/// about 50 builds to settle (every cache off, atlas: the first 10 builds
/// 1.25-1.35 ms, builds 10-50 1.1 ms, then 0.86-0.90 ms; no such transient
/// without plugins, and no page faults after the first 10 builds): the
/// figures are the settled ones, and the all-off row's warm-up is reported
/// beside it.
const WARM_UP_BUILDS: usize = 100;

/// Times `iters` builds after [`WARM_UP_BUILDS`] warm-up builds; returns the
/// warm-up builds' stats too.
fn time_builds_and_warm_up(assembler: &Assembler, turn: &Turn, iters: usize, new_clock: bool) -> (Stats, Stats) {
    let warm_up = (0..WARM_UP_BUILDS)
        .map(|_| {
            let begin = Instant::now();
            std::hint::black_box(assembler.build(turn).unwrap());
            begin.elapsed()
        })
        .collect();
    (time_builds(assembler, turn, iters, new_clock), stats(warm_up))
}

/// Times `iters` builds after a few warm-up builds.
fn time_builds(assembler: &Assembler, turn: &Turn, iters: usize, new_clock: bool) -> Stats {
    let mut t = turn.clone();
    let start = t.now.unwrap();
    for _ in 0..3 {
        assembler.build(&t).unwrap();
    }
    let samples = (0..iters)
        .map(|i| {
            if new_clock {
                t.now = Some(start + chrono::Duration::seconds(i as i64 + 10));
            }
            let begin = Instant::now();
            let built = assembler.build(&t).unwrap();
            let took = begin.elapsed();
            std::hint::black_box(built);
            took
        })
        .collect();
    stats(samples)
}

/// Runs one process, returning its wall time and peak RSS (KiB).
#[allow(clippy::zombie_processes)] // reaped by wait4, which also gives its rusage
fn run_process(proem: &str, args: &[&str], cache: &Path) -> (Duration, u64) {
    let begin = Instant::now();
    let child = Command::new(proem)
        .args(args)
        .env("PROEM_CACHE_DIR", cache)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: wait4 on our own child's pid with valid out-pointers.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let took = begin.elapsed();
    assert!(pid > 0 && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "proem failed");
    (took, usage.ru_maxrss as u64)
}

fn process_row(what: &str, runs: &[(Duration, u64)]) -> String {
    let s = stats(runs.iter().map(|r| r.0).collect());
    let rss = runs.iter().map(|r| r.1).max().unwrap_or(0);
    format!("| {what} | {} | {} | {} |", ms(s.p50), ms(s.p99), kib(rss))
}

/// An agent whose MEMORY.md holds `bytes` of markdown, all of it injected.
fn sized_agent(dir: &Path, bytes: usize) {
    let entry = "- 2025-03-14: Priya booked the laser cutter for 3 hours on Friday for the lamp series.\n";
    let mut memory = String::from("# Memory\n\n");
    let mut day = 0;
    while memory.len() < bytes {
        if day % 20 == 0 {
            memory.push_str(&format!("\n## Week {}\n\n", day / 20 + 1));
        }
        memory.push_str(entry);
        day += 1;
    }
    std::fs::write(dir.join("MEMORY.md"), memory).unwrap();
    std::fs::write(dir.join("SOUL.md"), "# Soul\nPlain and careful.\n").unwrap();
    std::fs::write(
        dir.join("proem.toml"),
        "[agent]\nid = \"sweep\"\n[budget]\ntokens = 2000000\nper_file_chars = 2000000\ntotal_file_chars = 2000000\n[bootstrap]\nmax_file_bytes = 4000000\n",
    )
    .unwrap();
}

/// Which caches a figure ran without ("all": none off).
fn describe(c: Caching) -> String {
    if c == Caching::NONE {
        return "all off".into();
    }
    let off: Vec<&str> = [
        (c.builds, "build memo"),
        (c.plugin_outputs, "plugin memo"),
        (c.token_counts, "token counts"),
        (c.file_events, "file events"),
        (c.prepared_tools, "tool memo"),
    ]
    .into_iter()
    .filter(|(on, _)| !on)
    .map(|(_, name)| name)
    .collect();
    if off.is_empty() {
        "all".into()
    } else {
        format!("{} off", off.join(" + "))
    }
}

fn ratio(a: Stats, b: Stats) -> f64 {
    a.p50.as_secs_f64() / b.p50.as_secs_f64()
}

/// A duration in µs, or in ms from 1 ms up (two decimals below 10 ms: the
/// in-process targets are set in µs around 1 ms).
fn us(d: Duration) -> String {
    if d >= Duration::from_millis(10) {
        return ms(d);
    }
    if d >= Duration::from_millis(1) {
        return format!("{:.2} ms", d.as_secs_f64() * 1e3);
    }
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn kib(k: u64) -> String {
    format!("{:.1} MB", k as f64 / 1024.0)
}

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

fn peak_kib() -> u64 {
    status_kib("VmHWM:")
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        .unwrap_or_default();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    format!("{cpu}, {cores} cores")
}

/// A log-log line chart of p50 times (three series) against `x`.
fn write_svg(path: &Path, title: &str, x_label: &str, names: [&str; 3], points: &[(f64, Vec<Duration>)]) {
    let (w, h, left, bottom, top, right) = (640.0, 400.0, 70.0, 50.0, 40.0, 20.0);
    let xs: Vec<f64> = points.iter().map(|p| p.0.max(0.5)).collect();
    let ys: Vec<f64> = points.iter().flat_map(|p| p.1.iter().map(|d| d.as_secs_f64() * 1e6)).collect();
    let (x0, x1) =
        (xs.iter().cloned().fold(f64::MAX, f64::min).log10(), xs.iter().cloned().fold(0.0, f64::max).log10());
    let (y0, y1) = (
        ys.iter().cloned().fold(f64::MAX, f64::min).log10().floor(),
        ys.iter().cloned().fold(0.0, f64::max).log10().ceil(),
    );
    let px = |x: f64| left + (x.max(0.5).log10() - x0) / (x1 - x0).max(1e-9) * (w - left - right);
    let py = |y: f64| h - bottom - (y.log10() - y0) / (y1 - y0).max(1e-9) * (h - top - bottom);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{title} (p50, log-log)</text>\n",
        w / 2.0
    );
    let mut decade = y0;
    while decade <= y1 {
        let y = py(10f64.powf(decade));
        let label = match 10f64.powf(decade) {
            v if v >= 1000.0 => format!("{} ms", v / 1000.0),
            v => format!("{v} µs"),
        };
        let _ = writeln!(svg, "<line x1=\"{left}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{label}</text>", w - right, left - 6.0, y + 4.0);
        decade += 1.0;
    }
    for (x, _) in points {
        let _ = writeln!(svg, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{x}</text>", px(*x), h - bottom + 16.0);
    }
    let _ = writeln!(svg, "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{x_label}</text>", w / 2.0, h - 12.0);
    let colors = ["#1b7837", "#2166ac", "#b2182b"];
    for s in 0..3 {
        let path: Vec<String> =
            points.iter().map(|(x, ys)| format!("{:.1},{:.1}", px(*x), py(ys[s].as_secs_f64() * 1e6))).collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
            colors[s],
            path.join(" ")
        );
        let _ = writeln!(
            svg,
            "<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>",
            left + 10.0,
            top + 16.0 + 16.0 * s as f64,
            colors[s],
            names[s]
        );
    }
    svg.push_str("</svg>\n");
    std::fs::write(path, svg).unwrap();
}

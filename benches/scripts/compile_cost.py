#!/usr/bin/env python3
"""compile_cost.py PROEM [--ops NAME,...] [--bounds]: what compiling a plugin
really costs, against what host/wasm/src/compile_cost.rs charges for it
(docs/PERFORMANCE.md, "Compile cost"; docs/SECURITY.md, "Bad binaries").

Per operator: a component of FUNCTIONS functions, each REPEAT copies of one
operator (with what it needs on the stack, its result kept in a local), is compiled by
`PROEM plugin run` in a fresh cache folder under /usr/bin/time; bytes per
copy = (peak RSS - the peak of the same functions empty) / copies. It must
stay under what the copy is charged (the operator and the ones that feed
it), and its CPU under 10 ns per byte charged: a line marked OVER or SLOW
is a charge to raise in compile_cost.rs.

--bounds: components charged just under the limits (the dearest shape of
each kind, as many as fit), and their real peak RSS and CPU: the bound a
hostile plugin meets. And one just over, which must be refused before it
compiles. Needs wasm-tools (cargo install wasm-tools) and GNU time.
"""
import os, re, shutil, subprocess, sys, tempfile

FUNCTIONS, REPEAT = 2000, 1000
# Charges, from compile_cost.rs.
LIGHT, MEDIUM, HEAVY, PER_FUNCTION = 64, 384, 2048, 8192
LIMIT, FUNCTION_LIMIT = 3 << 29, 64 << 20

# Locals: 0 i32, 1 i64, 2 f32, 3 f64.
GET = {"i32": "local.get 0", "i64": "local.get 1", "f32": "local.get 2", "f64": "local.get 3"}


SET = {t: g.replace("get", "set") for t, g in GET.items()}


def result_type(name):
    """What an operator leaves: a comparison or test an i32, a conversion
    its own type, the rest the type they work on."""
    t, rest = name.split(".")
    if rest.split("_")[0] in ("eqz", "eq", "ne", "lt", "gt", "le", "ge"):
        return "i32"
    return t


def keep(name):
    """The result stored in a local, so the compiler cannot drop the
    operator as dead (a `drop` lets it)."""
    return f"{name} {SET[result_type(name)]}"


def unop(t, name):
    return f"{GET[t]} {keep(t + '.' + name)}"


def binop(t, name):
    return f"{GET[t]} {GET[t]} {keep(t + '.' + name)}"


def light_ops():
    ops = {}
    for t in ("i32", "i64"):
        for n in ("eqz", "clz", "ctz", "popcnt", "extend8_s", "extend16_s"):
            ops[f"{t}.{n}"] = unop(t, n)
        for n in "eq ne lt_s lt_u gt_s gt_u le_s le_u ge_s ge_u add sub mul and or xor shl shr_s shr_u rotl rotr".split():
            ops[f"{t}.{n}"] = binop(t, n)
    ops["i64.extend32_s"] = unop("i64", "extend32_s")
    for t in ("f32", "f64"):
        for n in "abs neg ceil floor trunc nearest sqrt".split():
            ops[f"{t}.{n}"] = unop(t, n)
        for n in "add sub mul div min max copysign eq ne lt gt le ge".split():
            ops[f"{t}.{n}"] = binop(t, n)
    for name in ("i32.wrap_i64", "i64.extend_i32_s", "i64.extend_i32_u", "f32.convert_i32_s", "f32.convert_i32_u",
                 "f32.convert_i64_s", "f32.convert_i64_u", "f32.demote_f64", "f64.convert_i32_s", "f64.convert_i32_u",
                 "f64.convert_i64_s", "f64.convert_i64_u", "f64.promote_f32", "i32.reinterpret_f32",
                 "i64.reinterpret_f64", "f32.reinterpret_i32", "f64.reinterpret_i64", "i32.trunc_sat_f32_s",
                 "i32.trunc_sat_f32_u", "i32.trunc_sat_f64_s", "i32.trunc_sat_f64_u", "i64.trunc_sat_f32_s",
                 "i64.trunc_sat_f32_u", "i64.trunc_sat_f64_s", "i64.trunc_sat_f64_u"):
        t, rest = name.split(".")
        source = re.search(r"_(i32|i64|f32|f64)", rest).group(1)
        ops[name] = f"{GET[source]} {keep(name)}"
    ops["nop"] = "nop"
    ops["unreachable"] = "block unreachable end"
    ops["select"] = "local.get 1 local.get 1 local.get 0 select local.set 1"
    ops["local.set"] = "local.get 0 local.set 0"
    ops["local.tee"] = "local.get 0 local.tee 0 local.set 0"
    ops["i64.const"] = "i64.const 7 local.set 1"
    return ops


def medium_ops():
    ops = {}
    for t in ("i32", "i64"):
        for n in ("div_s", "div_u", "rem_s", "rem_u"):
            ops[f"{t}.{n}"] = binop(t, n)
    loads = ["i32.load", "i64.load", "f32.load", "f64.load", "i32.load8_s", "i32.load8_u", "i32.load16_s",
             "i32.load16_u", "i64.load8_s", "i64.load8_u", "i64.load16_s", "i64.load16_u", "i64.load32_s",
             "i64.load32_u"]
    for name in loads:
        ops[name] = f"local.get 0 {name} {SET[name[:3]]}"
    for name in ("i32.store", "i64.store", "f32.store", "f64.store", "i32.store8", "i32.store16", "i64.store8",
                 "i64.store16", "i64.store32"):
        ops[name] = f"local.get 0 {GET[name[:3]]} {name}"
    ops["br_if"] = "local.get 0 br_if 0"
    ops["if"] = "local.get 0 if end"
    ops["call"] = "call 0"
    ops["return"] = "local.get 0 if return end"
    ops["global.get"] = "global.get 0 local.set 0"
    ops["global.set"] = "local.get 0 global.set 0"
    ops["memory.size"] = "memory.size local.set 0"
    ops["memory.grow"] = "local.get 0 memory.grow local.set 0"
    ops["block"] = "block end"
    ops["br"] = "block br 0 end"
    ops["br_table"] = "block local.get 0 br_table 0 0 end"
    return ops


def heavy_ops():
    return {
        "loop": "loop end",
        "loop+br_if": "loop local.get 0 br_if 0 end",
        "call_indirect": "local.get 0 call_indirect (type 0)",
        "table.get": "local.get 0 table.get 0 drop",
        "i32.trunc_f64_s": "local.get 3 i32.trunc_f64_s local.set 0",
        "memory.fill": "local.get 0 local.get 0 local.get 0 memory.fill",
        "memory.copy": "local.get 0 local.get 0 local.get 0 memory.copy",
    }


HEAVY_NAMES = {"loop", "call_indirect", "table.get", "i32.trunc_f64_s", "memory.fill", "memory.copy"}
MEDIUM_NAMES = {"block", "br", "br_if", "if", "br_table", "call", "return", "global.get", "global.set", "memory.size",
                "memory.grow"}


def charge(body):
    """What compile_cost.rs charges for one copy of `body`: each operator by
    its kind (a load, store, division or remainder is medium)."""
    total = 0
    for word in body.split():
        if not word[0].isalpha() or word.startswith("(type"):
            continue  # an immediate
        if word in HEAVY_NAMES or "trunc" in word and word.startswith("i") or word.endswith("convert_i64_u"):
            total += HEAVY
        elif word in MEDIUM_NAMES or re.search(r"\.(load|store)|\.(div|rem)_|^f(32|64)\.|_f(32|64)", word):
            total += MEDIUM
        else:
            total += LIGHT
    return total


def module(functions, body, repeat):
    text = " ".join([body] * repeat)
    func = f"(func (type 0) (local i32 i64 f32 f64) {text})"
    return ("(module (type (func)) (table 1 funcref) (memory 1) (global (mut i32) (i32.const 0))\n"
            + "\n".join([func] * functions) + ")")


def leb(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def component(core):
    """A component holding one core module and the API stamp: it passes the
    checks before compiling, compiles, then fails to link (no describe)."""
    name = b"proem:api-version"
    custom = leb(len(name)) + name + b"0.2.0"
    return b"\0asm\x0d\x00\x01\x00" + b"\x01" + leb(len(core)) + core + b"\x00" + leb(len(custom)) + custom


def build(work, label, functions, body, repeat):
    wat = os.path.join(work, label + ".wat")
    with open(wat, "w") as f:
        f.write(module(functions, body, repeat))
    core = subprocess.run(["wasm-tools", "parse", wat], check=True, capture_output=True).stdout
    os.unlink(wat)
    path = os.path.join(work, label + ".wasm")
    with open(path, "wb") as f:
        f.write(component(core))
    return path


def compile_once(proem, work, wasm):
    cache = tempfile.mkdtemp(dir=work)
    os.chmod(cache, 0o700)
    env = dict(os.environ, PROEM_CACHE_DIR=cache)
    run = subprocess.run(["/usr/bin/time", "-f", "TIME %M %U %S %e", proem, "plugin", "run", wasm],
                         env=env, capture_output=True, text=True)
    shutil.rmtree(cache)
    m = re.search(r"TIME (\d+) ([\d.]+) ([\d.]+) ([\d.]+)", run.stderr)
    refused = "to compile, over proem's limit" in run.stderr
    return int(m.group(1)) * 1024, float(m.group(2)) + float(m.group(3)), refused, run.stderr


def per_operator(proem, work, names):
    base, _, _, _ = compile_once(proem, work, build(work, "base", FUNCTIONS, "", 1))
    print(f"{'operator (one copy)':22} {'bytes':>9} {'charged':>8}  {'µs':>6}")
    table = {**light_ops(), **medium_ops(), **heavy_ops()}
    for name in names or table:
        # As many copies as the limit lets through (heavy operators: fewer).
        repeat = min(REPEAT, (LIMIT // FUNCTIONS - PER_FUNCTION - 64) // charge(table[name]) - 1)
        wasm = build(work, "op", FUNCTIONS, table[name], repeat)
        peak, cpu, refused, err = compile_once(proem, work, wasm)
        if refused:
            print(f"{name:22} refused before compiling (charged over the limit)")
            continue
        if "no exported instance" not in err:
            print(f"{name:22} did not compile: {err.strip()[-200:]}")
            continue
        each = (peak - base) / (FUNCTIONS * repeat)
        micros = cpu * 1e6 / (FUNCTIONS * repeat)
        charged = charge(table[name])
        mark = "  OVER" if each > charged else ""
        # Time: at most 10 ns of CPU per byte charged.
        mark += "  SLOW" if micros * 1000 > 10 * charged else ""
        print(f"{name:22} {each:9.0f} {charged:8}  {micros:6.2f}{mark}", flush=True)


def bounds(proem, work):
    base = PER_FUNCTION + 4 * 8 + LIGHT  # a function: its four locals and its `end`

    def fit(per_copy, functions):
        return (LIMIT - functions * base) // (per_copy * functions) - 1

    def fit_one(per_copy):
        return (FUNCTION_LIMIT - base) // per_copy - 1

    def under(label, functions, body):
        per_copy = charge(body)
        return label, functions, body, fit(per_copy, functions) if functions > 1 else fit_one(per_copy)

    shapes = [
        ("empty functions, as many as fit", LIMIT // base - 1, "", 1),
        under("loops+br_if, 2000 functions", 2000, heavy_ops()["loop+br_if"]),
        under("call_indirect, 2000 functions", 2000, heavy_ops()["call_indirect"]),
        under("i64.div_s, 2000 functions", 2000, medium_ops()["i64.div_s"]),
        under("i32.store, 2000 functions", 2000, medium_ops()["i32.store"]),
        under("blocks, 2000 functions", 2000, medium_ops()["block"]),
        under("select, 2000 functions", 2000, light_ops()["select"]),
        under("one function of loops+br_if", 1, heavy_ops()["loop+br_if"]),
        under("one function of i32.add", 1, light_ops()["i32.add"]),
        under("one function of i32.load", 1, medium_ops()["i32.load"]),
    ]
    print(f"{'just under the limits':36} {'wasm':>8} {'peak RSS':>9} {'CPU':>7}")
    for label, functions, body, repeat in shapes:
        wasm = build(work, "bound", functions, body, repeat)
        peak, cpu, refused, err = compile_once(proem, work, wasm)
        state = "REFUSED (charged over: lower the count)" if refused else ""
        print(f"{label:36} {os.path.getsize(wasm) / 1e6:6.1f}MB {peak / 2**20:7.0f}MiB {cpu:6.1f}s {state}", flush=True)
    wasm = build(work, "over", LIMIT // base + 1, "", 1)
    _, cpu, refused, _ = compile_once(proem, work, wasm)
    print(f"{'empty functions, just over':36} {'refused before compiling' if refused else 'NOT REFUSED'} ({cpu:.2f}s)")


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    proem = os.path.abspath(args[0])
    names = None
    if "--ops" in args:
        names = args[args.index("--ops") + 1].split(",")
    with tempfile.TemporaryDirectory() as work:
        if "--bounds" in args:
            bounds(proem, work)
        else:
            per_operator(proem, work, names)


if __name__ == "__main__":
    main()

//! What compiling a plugin would cost, estimated from its code before
//! anything is compiled, and refused over a bound.
//!
//! Cranelift's memory and time grow with the code: not with the binary's
//! bytes (a 400 KB component of 100,000 empty functions took 624 MB and
//! 2.4 s; a 2.1 MB function of 300,000 loops, 1.8 GB and 9.8 s), but with
//! what each operator becomes. Nothing interrupts a compile once started,
//! and it runs in the host's process, so the bound is applied first: every
//! function and every operator of every core module is charged what it was
//! measured to cost (bytes of compile memory kept, `benches/compile_cost.sh`),
//! and a component whose total, or one of whose functions, is over the
//! limit is refused naming both.
//!
//! The charge is an upper bound by construction: an operator is charged
//! [`HEAVY`] unless it is listed below as measured cheaper, so an operator
//! this table does not know (a new proposal, SIMD, atomics) is charged as
//! the dearest ever measured, not as free.

/// The most a component's compile may be estimated to need, in bytes
/// (1.5 GiB). The largest real plugins are estimated at: the Python
/// template (componentize-py, 13,361 functions) 0.56 GiB; the
/// StarlingMonkey JavaScript runtime (componentize-js, 12,701 functions)
/// 0.77 GiB, its weval build 0.93 GiB; the official Rust plugins under
/// 24 MiB. What the estimate costs for real, at most: docs/SECURITY.md,
/// "Bad binaries".
pub const MAX_COMPONENT_COST: u64 = 3 << 29;

/// The most one function may be estimated to need. A function's compile
/// holds its whole IR at once (up to ~6 times what it keeps), and one
/// function compiles on each core at a time. The largest real function
/// met (CPython's interpreter loop, 427 KB of wasm) is estimated at
/// 33 MiB.
pub const MAX_FUNCTION_COST: u64 = 64 << 20;

/// Charged per function: its frame, signature and metadata (100,000 empty
/// functions kept 6.0 KB each).
const PER_FUNCTION: u64 = 8 << 10;
/// Charged per core type, and per parameter or result of a function type.
const PER_TYPE: u64 = 1 << 10;
const PER_TYPE_VALUE: u64 = 256;
/// Charged per declared local.
const PER_LOCAL: u64 = 8;
/// Integer operators, locals and constants: at most a few instructions, no
/// trap site and no block (measured ≤ 51 bytes and ≤ 0.2 µs each with
/// Winch, ≤ 19 bytes with Cranelift).
const LIGHT: u64 = 64;
/// Operators that become a trap site, a call site, a branch, a block or a
/// sequence (loads and stores, `block`, `br`, `br_if`, `if`, `call`,
/// globals, integer division, float operators and conversions; measured
/// ≤ 299 bytes and ≤ 4.2 µs each).
const MEDIUM: u64 = 384;
/// Everything else: loops (an interruption check and a block each),
/// indirect calls, table access, bulk memory, float-to-int conversions and
/// unsigned 64-bit int-to-float ones (a sequence with branches each: a
/// `trunc_sat`/`convert_i64_u` pair kept ~780 bytes), and every operator
/// not listed (measured ≤ 1,089 bytes and ≤ 16.5 µs each).
pub const HEAVY: u64 = 2 << 10;
/// Charged per `br_table` target on top of [`MEDIUM`].
const PER_TARGET: u64 = 32;

/// What compiling a component is estimated to need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cost {
    /// Functions with a body, across every core module.
    pub functions: u64,
    /// The estimate for the whole component, in bytes.
    pub total: u64,
    /// The estimate for its dearest function, in bytes.
    pub largest_function: u64,
}

/// The estimate for `bytes`, or why it is refused: over a limit, or
/// malformed. Never panics, whatever the bytes; one pass over the code.
pub fn check(bytes: &[u8]) -> Result<Cost, String> {
    let cost = estimate(bytes)?;
    within_limits(&cost)?;
    Ok(cost)
}

/// Whether an estimate is within the limits, or the refusal naming both.
pub fn within_limits(cost: &Cost) -> Result<(), String> {
    let mib = |b: u64| b.div_ceil(1 << 20);
    let fix = "a plugin's code must compile within proem's bound (docs/SECURITY.md, \"Bad binaries\"); \
               build it in release mode and leave out code it does not run";
    if cost.total > MAX_COMPONENT_COST {
        return Err(format!(
            "its code ({} functions) would need about {} MiB to compile, over proem's limit of {} MiB: {fix}",
            cost.functions,
            mib(cost.total),
            mib(MAX_COMPONENT_COST)
        ));
    }
    if cost.largest_function > MAX_FUNCTION_COST {
        return Err(format!(
            "one of its functions would need about {} MiB to compile, over proem's limit of {} MiB for one \
             function: {fix}",
            mib(cost.largest_function),
            mib(MAX_FUNCTION_COST)
        ));
    }
    Ok(())
}

/// The estimate alone (see [`check`]). One pass over every body, bounded
/// by the binary's own size cap; sums saturate (a total past `u64::MAX` is
/// over every limit anyway).
pub fn estimate(bytes: &[u8]) -> Result<Cost, String> {
    let malformed = |e: wasmparser::BinaryReaderError| format!("malformed component: {e}");
    let mut cost = Cost::default();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.map_err(malformed)? {
            wasmparser::Payload::CodeSectionEntry(body) => {
                let function = function_cost(&body).map_err(malformed)?;
                cost.functions = cost.functions.saturating_add(1);
                cost.total = cost.total.saturating_add(function);
                cost.largest_function = cost.largest_function.max(function);
            }
            wasmparser::Payload::TypeSection(types) => {
                cost.total = cost.total.saturating_add(types_cost(types).map_err(malformed)?);
            }
            _ => {}
        }
    }
    Ok(cost)
}

/// A core module's types: each is compiled into signatures, trampolines and
/// type information the loading process keeps (the red team's 140,000
/// types of 60 parameters each, and no code, took 1.9 GB to compile and
/// 1.2 GB to load).
fn types_cost(types: wasmparser::TypeSectionReader<'_>) -> wasmparser::Result<u64> {
    let mut cost = 0u64;
    for group in types {
        for ty in group?.types() {
            let values = match &ty.composite_type.inner {
                wasmparser::CompositeInnerType::Func(func) => func.params().len() + func.results().len(),
                _ => 0,
            };
            cost = cost.saturating_add(PER_TYPE).saturating_add((values as u64).saturating_mul(PER_TYPE_VALUE));
        }
    }
    Ok(cost)
}

fn function_cost(body: &wasmparser::FunctionBody<'_>) -> wasmparser::Result<u64> {
    let mut cost = PER_FUNCTION;
    let mut locals = body.get_locals_reader()?;
    for _ in 0..locals.get_count() {
        let (count, _) = locals.read()?;
        cost = cost.saturating_add(u64::from(count).saturating_mul(PER_LOCAL));
    }
    let mut operators = body.get_operators_reader()?;
    while !operators.eof() {
        cost = cost.saturating_add(operator_cost(&operators.read()?));
    }
    Ok(cost)
}

/// What one operator is charged. Lists only what was measured cheaper than
/// [`HEAVY`]; everything else is [`HEAVY`].
pub fn operator_cost(op: &wasmparser::Operator<'_>) -> u64 {
    use wasmparser::Operator as O;
    match op {
        O::BrTable { targets } => MEDIUM.saturating_add(u64::from(targets.len()).saturating_mul(PER_TARGET)),
        op if is_memory_access(op) => MEDIUM,
        O::BrIf { .. }
        | O::If { .. }
        | O::Call { .. }
        | O::ReturnCall { .. }
        | O::Return
        | O::GlobalGet { .. }
        | O::GlobalSet { .. }
        | O::MemorySize { .. }
        | O::Block { .. }
        | O::Br { .. }
        | O::MemoryGrow { .. }
        | O::I32DivS
        | O::I32DivU
        | O::I32RemS
        | O::I32RemU
        | O::I64DivS
        | O::I64DivU
        | O::I64RemS
        | O::I64RemU => MEDIUM,
        op if is_float(op) => MEDIUM,
        op if is_light(op) => LIGHT,
        _ => HEAVY,
    }
}

/// Plain loads and stores of every width (a bounds check each).
fn is_memory_access(op: &wasmparser::Operator<'_>) -> bool {
    use wasmparser::Operator as O;
    matches!(
        op,
        O::I32Load { .. }
            | O::I64Load { .. }
            | O::F32Load { .. }
            | O::F64Load { .. }
            | O::I32Load8S { .. }
            | O::I32Load8U { .. }
            | O::I32Load16S { .. }
            | O::I32Load16U { .. }
            | O::I64Load8S { .. }
            | O::I64Load8U { .. }
            | O::I64Load16S { .. }
            | O::I64Load16U { .. }
            | O::I64Load32S { .. }
            | O::I64Load32U { .. }
            | O::I32Store { .. }
            | O::I64Store { .. }
            | O::F32Store { .. }
            | O::F64Store { .. }
            | O::I32Store8 { .. }
            | O::I32Store16 { .. }
            | O::I64Store8 { .. }
            | O::I64Store16 { .. }
            | O::I64Store32 { .. }
    )
}

/// Integer operators, locals and constants: no trap, no call, no block or
/// branch.
fn is_light(op: &wasmparser::Operator<'_>) -> bool {
    use wasmparser::Operator as O;
    matches!(
        op,
        O::Nop
            | O::Unreachable
            | O::Else
            | O::End
            | O::Drop
            | O::Select
            | O::TypedSelect { .. }
            | O::LocalGet { .. }
            | O::LocalSet { .. }
            | O::LocalTee { .. }
            | O::I32Const { .. }
            | O::I64Const { .. }
            | O::I32Eqz
            | O::I32Eq
            | O::I32Ne
            | O::I32LtS
            | O::I32LtU
            | O::I32GtS
            | O::I32GtU
            | O::I32LeS
            | O::I32LeU
            | O::I32GeS
            | O::I32GeU
            | O::I64Eqz
            | O::I64Eq
            | O::I64Ne
            | O::I64LtS
            | O::I64LtU
            | O::I64GtS
            | O::I64GtU
            | O::I64LeS
            | O::I64LeU
            | O::I64GeS
            | O::I64GeU
            | O::I32Clz
            | O::I32Ctz
            | O::I32Popcnt
            | O::I32Add
            | O::I32Sub
            | O::I32Mul
            | O::I32And
            | O::I32Or
            | O::I32Xor
            | O::I32Shl
            | O::I32ShrS
            | O::I32ShrU
            | O::I32Rotl
            | O::I32Rotr
            | O::I64Clz
            | O::I64Ctz
            | O::I64Popcnt
            | O::I64Add
            | O::I64Sub
            | O::I64Mul
            | O::I64And
            | O::I64Or
            | O::I64Xor
            | O::I64Shl
            | O::I64ShrS
            | O::I64ShrU
            | O::I64Rotl
            | O::I64Rotr
            | O::I32WrapI64
            | O::I64ExtendI32S
            | O::I64ExtendI32U
            | O::I32Extend8S
            | O::I32Extend16S
            | O::I64Extend8S
            | O::I64Extend16S
            | O::I64Extend32S
    )
}

/// Float operators and the conversions to and from floats that cannot trap
/// (Winch makes a sequence of several instructions for most: `min`, `max`,
/// `copysign`, comparisons, unsigned conversions).
fn is_float(op: &wasmparser::Operator<'_>) -> bool {
    use wasmparser::Operator as O;
    matches!(
        op,
        O::F32Const { .. }
            | O::F64Const { .. }
            | O::F32Eq
            | O::F32Ne
            | O::F32Lt
            | O::F32Gt
            | O::F32Le
            | O::F32Ge
            | O::F64Eq
            | O::F64Ne
            | O::F64Lt
            | O::F64Gt
            | O::F64Le
            | O::F64Ge
            | O::F32Abs
            | O::F32Neg
            | O::F32Ceil
            | O::F32Floor
            | O::F32Trunc
            | O::F32Nearest
            | O::F32Sqrt
            | O::F32Add
            | O::F32Sub
            | O::F32Mul
            | O::F32Div
            | O::F32Min
            | O::F32Max
            | O::F32Copysign
            | O::F64Abs
            | O::F64Neg
            | O::F64Ceil
            | O::F64Floor
            | O::F64Trunc
            | O::F64Nearest
            | O::F64Sqrt
            | O::F64Add
            | O::F64Sub
            | O::F64Mul
            | O::F64Div
            | O::F64Min
            | O::F64Max
            | O::F64Copysign
            | O::F32ConvertI32S
            | O::F32ConvertI32U
            | O::F32ConvertI64S
            | O::F32DemoteF64
            | O::F64ConvertI32S
            | O::F64ConvertI32U
            | O::F64ConvertI64S
            | O::F64PromoteF32
            | O::I32ReinterpretF32
            | O::I64ReinterpretF64
            | O::F32ReinterpretI32
            | O::F64ReinterpretI64
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmparser::{BlockType, MemArg, Operator as O};

    /// A component holding `modules` (core module text) and the API stamp.
    fn component(modules: &[String]) -> Vec<u8> {
        fn leb(mut n: usize, out: &mut Vec<u8>) {
            loop {
                let byte = (n & 0x7f) as u8;
                n >>= 7;
                out.push(if n == 0 { byte } else { byte | 0x80 });
                if n == 0 {
                    return;
                }
            }
        }
        let mut out = b"\0asm\x0d\x00\x01\x00".to_vec();
        for text in modules {
            let core = wat::parse_str(text).expect("the test module parses");
            out.push(1);
            leb(core.len(), &mut out);
            out.extend_from_slice(&core);
        }
        let mut custom = Vec::new();
        leb(crate::binary::API_VERSION_SECTION.len(), &mut custom);
        custom.extend_from_slice(crate::binary::API_VERSION_SECTION.as_bytes());
        custom.extend_from_slice(b"0.2.0");
        out.push(0);
        leb(custom.len(), &mut out);
        out.extend_from_slice(&custom);
        out
    }

    /// A module of `functions` functions, each `body` `repeat` times.
    fn module(functions: usize, body: &str, repeat: usize) -> String {
        let func = format!("(func (type 0) (local i32) {})", vec![body; repeat].join(" "));
        format!(
            "(module (type (func)) (table 1 funcref) (memory 1) (global (mut i32) (i32.const 0)) {})",
            vec![func; functions].join("\n")
        )
    }

    /// What the generator's shapes are, stated here from what each
    /// operator becomes (not read from the table under test): the kind of
    /// each, and the operators each copy holds besides it.
    const SHAPES: &[(&str, u64, u64)] = &[
        // (body, charge of the named operator, light operators besides)
        ("local.get 0 drop", LIGHT, 1),
        ("local.get 0 local.get 0 i32.add drop", LIGHT, 3),
        ("local.get 0 i32.load drop", MEDIUM, 2),
        ("local.get 0 local.get 0 i32.div_u drop", MEDIUM, 3),
        ("call 0", MEDIUM, 0),
        ("local.get 0 br_if 0", MEDIUM, 1),
        ("global.get 0 drop", MEDIUM, 1),
        ("loop end", HEAVY, 1),
        ("local.get 0 call_indirect (type 0)", HEAVY, 1),
        ("local.get 0 table.get 0 drop", HEAVY, 2),
        ("local.get 0 local.get 0 local.get 0 memory.fill", HEAVY, 3),
        ("local.get 0 i64.extend_i32_u f64.convert_i64_u drop", HEAVY, 3),
        ("local.get 0 f32.convert_i32_s drop", MEDIUM, 2),
    ];

    fn expected(functions: u64, (_, charge, light): (&str, u64, u64), repeat: u64) -> u64 {
        // Each function: its charge, one local, the body, and its `end`.
        functions * (PER_FUNCTION + PER_LOCAL + repeat * (charge + light * LIGHT) + LIGHT)
    }

    #[test]
    fn the_estimate_is_what_each_function_and_operator_is_charged() {
        let mut seed = 0x5eed_u64;
        let mut next = |bound: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % bound
        };
        for _ in 0..60 {
            let shape = SHAPES[next(SHAPES.len() as u64) as usize];
            let (functions, repeat) = (1 + next(40), next(300));
            let bytes = component(&[module(functions as usize, shape.0, repeat as usize)]);
            let cost = estimate(&bytes).unwrap();
            assert_eq!(cost.functions, functions, "{shape:?}");
            // The module's one type, `(func)`, as well.
            let total = expected(functions, shape, repeat) + PER_TYPE;
            assert_eq!(cost.total, total, "{shape:?} × {repeat} in {functions}");
            assert_eq!(cost.largest_function, expected(1, shape, repeat), "{shape:?}");
        }
        // Every core module counts, nested ones included.
        let one = module(3, "loop end", 5);
        let two = estimate(&component(&[one.clone(), one.clone()])).unwrap();
        assert_eq!(two.total, 2 * estimate(&component(&[one])).unwrap().total);
    }

    #[test]
    fn a_component_over_a_limit_is_refused_naming_the_estimate_and_the_limit() {
        // Empty functions: the count alone (100,000 of them took 624 MB).
        let functions = ((MAX_COMPONENT_COST - PER_TYPE) / expected(1, ("", 0, 0), 0)) as usize;
        assert!(check(&component(&[module(functions, "", 0)])).is_ok());
        let why = check(&component(&[module(functions + 1, "", 0)])).unwrap_err();
        assert!(why.contains("would need about 1537 MiB to compile, over proem's limit of 1536 MiB"), "{why}");
        assert!(why.contains(&format!("({} functions)", functions + 1)), "{why}");
        // One function: loops (one function of 300,000 took 1.8 GB).
        let loop_end = ("loop end", HEAVY, 1);
        let loops = ((MAX_FUNCTION_COST - expected(1, loop_end, 0)) / (HEAVY + LIGHT)) as usize;
        assert!(check(&component(&[module(1, "loop end", loops)])).is_ok());
        let why = check(&component(&[module(1, "loop end", loops + 1)])).unwrap_err();
        assert!(why.contains("one of its functions would need about 65 MiB"), "{why}");
        assert!(why.contains("limit of 64 MiB for one function"), "{why}");
    }

    #[test]
    fn types_are_charged_by_their_parameters() {
        let params = |n: usize| format!("(type (func (param {})))", vec!["i64"; n].join(" "));
        let base = estimate(&component(&[module(1, "", 0)])).unwrap().total;
        let with = |types: usize, n: usize| {
            let text = module(1, "", 0).replacen(
                "(type (func))",
                &format!("(type (func)) {}", vec![params(n); types].join(" ")),
                1,
            );
            estimate(&component(&[text])).unwrap().total - base
        };
        assert_eq!(with(3, 0), 3 * PER_TYPE);
        assert_eq!(with(2, 60), 2 * (PER_TYPE + 60 * PER_TYPE_VALUE));
        // The red team's 140,000 types of 60 parameters: refused.
        const { assert!(140_000 * (PER_TYPE + 60 * PER_TYPE_VALUE) > MAX_COMPONENT_COST) };
    }

    #[test]
    fn an_operator_not_listed_is_charged_as_the_dearest() {
        let memarg = MemArg { align: 0, max_align: 0, offset: 0, memory: 0 };
        let unlisted = [
            O::Loop { blockty: BlockType::Empty },
            O::CallIndirect { type_index: 0, table_index: 0 },
            O::ReturnCallIndirect { type_index: 0, table_index: 0 },
            O::TableGet { table: 0 },
            O::TableSet { table: 0 },
            O::TableGrow { table: 0 },
            O::MemoryFill { mem: 0 },
            O::MemoryCopy { dst_mem: 0, src_mem: 0 },
            O::MemoryInit { data_index: 0, mem: 0 },
            O::I32TruncF32S,
            O::I64TruncF64U,
            O::RefFunc { function_index: 0 },
            O::V128Load { memarg },
            O::I32x4Add,
            O::I8x16Swizzle,
            O::I32AtomicLoad { memarg },
            O::MemoryAtomicWait32 { memarg },
            O::Throw { tag_index: 0 },
        ];
        for op in &unlisted {
            assert_eq!(operator_cost(op), HEAVY, "{op:?}");
        }
        // And the listed ones, by kind.
        assert_eq!(operator_cost(&O::I32Add), LIGHT);
        assert_eq!(operator_cost(&O::Block { blockty: BlockType::Empty }), MEDIUM);
        assert_eq!(operator_cost(&O::F64Div), MEDIUM);
        assert_eq!(operator_cost(&O::F32Min), MEDIUM);
        assert_eq!(operator_cost(&O::I64TruncSatF64U), HEAVY);
        assert_eq!(operator_cost(&O::F64ConvertI64U), HEAVY);
        assert_eq!(operator_cost(&O::F64ConvertI64S), MEDIUM);
        assert_eq!(operator_cost(&O::I64ExtendI32U), LIGHT);
        assert_eq!(operator_cost(&O::I64Store32 { memarg }), MEDIUM);
        assert_eq!(operator_cost(&O::I64RemS), MEDIUM);
    }

    #[test]
    fn the_real_plugins_are_far_under_the_limits() {
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/v0_1");
        let mut seen = 0;
        for dir in [crate::GUEST_DIR, fixtures] {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "wasm") {
                    let cost = check(&std::fs::read(&path).unwrap()).unwrap();
                    assert!(cost.functions > 100, "{}: {cost:?}", path.display());
                    assert!(cost.total < MAX_COMPONENT_COST / 32, "{}: {cost:?}", path.display());
                    seen += 1;
                }
            }
        }
        assert!(seen >= 8, "{seen} plugins");
    }

    #[test]
    fn arbitrary_and_damaged_bytes_never_panic() {
        let base = component(&[module(4, "local.get 0 i32.load drop loop end", 3)]);
        let mut seed = 11u64;
        for round in 0..2000 {
            let mut bytes = base.clone();
            for _ in 0..1 + round % 4 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let at = (seed >> 20) as usize % bytes.len();
                bytes[at] = (seed >> 56) as u8;
            }
            if round % 7 == 0 {
                bytes.truncate((seed >> 40) as usize % bytes.len());
            }
            let _ = check(&bytes);
        }
    }
}

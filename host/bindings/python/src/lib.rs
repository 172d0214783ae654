//! `proem._proem`: the native half of the `proem` Python package (the
//! Python half, `python/proem/__init__.py`, takes a turn as keywords or a
//! dict and hands both here; [`turn`] makes them the members of the JSON
//! body `proem serve` takes, without JSON text, and `proem::binding`
//! checks them as the service does).
//!
//! One [`Agent`] per agent folder, kept for the process: its assembler keeps
//! its memos between builds exactly as in Rust. A build runs with the GIL
//! released. The results are the Rust values wrapped, converted to Python
//! objects only when a field is read.

mod turn;

use proem::binding::{Failure, Refusal, Spelling};
use proem::{Assembler, BuildRequest, Caching, Format, ProemError};
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::Arc;

pyo3::create_exception!(
    _proem,
    ProemError_,
    PyException,
    "A build that could not produce a prompt. `message` is what `proem build` prints after `proem: error: `, `code` the kind (`bad-request`, `budget-too-small`, `plugin-failed`, `agent-unavailable`), `field` the turn field at fault (or None), `exit_code` what `proem build` exits with for the same mistake (2 for a turn refused before the build, as the CLI's usage errors; else 1)."
);

/// The exception for `failure`, carrying the CLI's message, the kind's
/// code, the field and the CLI's exit status for the same mistake.
fn raise(py: Python<'_>, failure: Failure) -> PyErr {
    let err = ProemError_::new_err(failure.message.clone());
    let value = err.value(py);
    let set = |name: &str, v: Py<PyAny>| value.setattr(name, v);
    let none = |_| py.None();
    let done = set("message", failure.message.into_pyobject(py).map(|v| v.into_any().unbind()).unwrap_or_else(none))
        .and_then(|()| set("code", failure.code.into_pyobject(py).map(|v| v.into_any().unbind()).unwrap_or_else(none)))
        .and_then(|()| set("field", failure.field.into_pyobject(py).map(|v| v.unbind()).unwrap_or_else(none)))
        .and_then(|()| {
            set("exit_code", failure.exit_code.into_pyobject(py).map(|v| v.into_any().unbind()).unwrap_or_else(none))
        });
    match done {
        Ok(()) => err,
        Err(e) => e,
    }
}

fn build_error(py: Python<'_>, error: &ProemError) -> PyErr {
    raise(py, Failure::of(error))
}

/// The request of a turn given as a dict (or None) and keywords, checked as
/// the service checks its body: an unknown or bad field is a `bad-request`
/// naming it; `turn` not a dict is a `TypeError`.
fn parse_turn(
    py: Python<'_>,
    turn: Option<&Bound<'_, PyAny>>,
    fields: Option<&Bound<'_, PyDict>>,
) -> PyResult<BuildRequest> {
    let refused = |r: Refusal| raise(py, r.into());
    let members = turn::members(turn, fields).map_err(|e| e.map_or_else(|e| e, refused))?;
    proem::binding::request_from_members(Spelling::Snake, members).map_err(refused)
}

/// The `ProemError` of a turn refused as a whole for `why` (the Python
/// half's own checks of a Mapping), as the native half refuses one.
#[pyfunction]
fn _refused(py: Python<'_>, why: &str) -> PyErr {
    raise(py, Refusal::of_turn(why).into())
}

/// What is kept between builds: `True` (everything, the default), `False`
/// (nothing), or a dict of `Caching`'s fields (unnamed ones stay on).
fn caching_of(value: Option<&Bound<'_, PyAny>>) -> PyResult<Caching> {
    let Some(value) = value else { return Ok(Caching::default()) };
    if let Ok(on) = value.extract::<bool>() {
        return Ok(if on { Caching::default() } else { Caching::NONE });
    }
    let dict = value.cast::<PyDict>().map_err(|_| {
        PyValueError::new_err("caching: expected True, False or a dict of flags (builds, plugin_outputs, token_counts, file_events, prepared_tools, workspace_reads)")
    })?;
    let mut caching = Caching::default();
    for (key, on) in dict.iter() {
        let key: String = key.extract()?;
        let on: bool =
            on.extract().map_err(|_| PyValueError::new_err(format!("caching[{key:?}]: expected True or False")))?;
        let flag = match key.as_str() {
            "builds" => &mut caching.builds,
            "plugin_outputs" => &mut caching.plugin_outputs,
            "token_counts" => &mut caching.token_counts,
            "file_events" => &mut caching.file_events,
            "prepared_tools" => &mut caching.prepared_tools,
            "workspace_reads" => &mut caching.workspace_reads,
            other => {
                return Err(PyValueError::new_err(format!(
                    "caching: unknown flag {other:?} (builds, plugin_outputs, token_counts, file_events, prepared_tools, workspace_reads)"
                )))
            }
        };
        *flag = on;
    }
    Ok(caching)
}

/// One agent folder, opened once: build it once per turn.
#[pyclass(subclass, frozen, module = "proem._proem")]
struct NativeAgent {
    assembler: Arc<Assembler>,
    path: PathBuf,
}

#[pymethods]
impl NativeAgent {
    #[new]
    #[pyo3(signature = (path, config=None, caching=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        config: Option<PathBuf>,
        caching: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let caching = caching_of(caching)?;
        let opened = {
            let (path, config) = (path.clone(), config.clone());
            py.detach(move || Assembler::open(&path, config.as_deref()))
        };
        let mut assembler = opened.map_err(|e| build_error(py, &e))?;
        assembler.set_caching(caching);
        Ok(NativeAgent { assembler: Arc::new(assembler), path })
    }

    /// The agent folder, as given.
    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// How many builds were answered from the build memo.
    #[getter]
    fn memo_hits(&self) -> u64 {
        self.assembler.memo_hits()
    }

    /// docs/PERFORMANCE.md's baseline: `n` builds of the turn (a dict)
    /// timed in Rust, nanoseconds each (`proem::binding::time_in_rust`).
    fn _time_in_rust(&self, py: Python<'_>, turn: &Bound<'_, PyAny>, n: u32, new_clock: bool) -> PyResult<Vec<u64>> {
        let request = parse_turn(py, Some(turn), None)?;
        let assembler = self.assembler.clone();
        py.detach(move || proem::binding::time_in_rust(&assembler, &request.turn, n, new_clock))
            .map_err(|e| build_error(py, &e))
    }

    /// The turn of a dict (or None) and keywords, checked, for
    /// `_build_request` on another thread (`build_async`).
    #[pyo3(signature = (turn, fields=None))]
    fn _request(
        &self,
        py: Python<'_>,
        turn: Option<&Bound<'_, PyAny>>,
        fields: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Request> {
        parse_turn(py, turn, fields).map(|request| Request { request })
    }

    /// Builds a checked turn, the GIL released for the build.
    fn _build_request(&self, py: Python<'_>, request: &Request) -> PyResult<Built> {
        self.build(py, &request.request)
    }

    /// Builds the turn of a dict (or None) and keywords, the GIL released
    /// for the build (a build memo hit answers without releasing it).
    #[pyo3(signature = (turn, fields=None))]
    fn _build(
        &self,
        py: Python<'_>,
        turn: Option<&Bound<'_, PyAny>>,
        fields: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Built> {
        let request = parse_turn(py, turn, fields)?;
        self.build(py, &request)
    }
}

impl NativeAgent {
    /// The build of `request`: the memo's own when it has it, else built
    /// with the GIL released.
    fn build(&self, py: Python<'_>, request: &BuildRequest) -> PyResult<Built> {
        let built = match self.assembler.memoised_shared(&request.turn) {
            Some(built) if !request.strict => built,
            _ => {
                let assembler = self.assembler.clone();
                py.detach(|| proem::binding::build(&assembler, request)).map_err(|e| build_error(py, &e))?
            }
        };
        Ok(Built { inner: built })
    }
}

/// A checked turn, not built yet.
#[pyclass(frozen, module = "proem._proem")]
struct Request {
    request: BuildRequest,
}

/// A built prompt and its report.
#[pyclass(frozen, module = "proem._proem")]
struct Built {
    inner: Arc<proem::Built>,
}

fn format_of(name: &str) -> PyResult<Format> {
    proem::binding::format_named(name).map_err(PyValueError::new_err)
}

#[pymethods]
impl Built {
    /// stable + "\n" + the boundary marker + "\n" + dynamic.
    #[getter]
    fn prompt(&self) -> &str {
        &self.inner.prompt
    }
    /// The part above the cache boundary: cache it.
    #[getter]
    fn stable(&self) -> &str {
        &self.inner.stable
    }
    /// This turn's part, below the boundary.
    #[getter]
    fn dynamic(&self) -> &str {
        &self.inner.dynamic
    }
    /// SHA-256 (hex) of `stable`.
    #[getter]
    fn stable_hash(&self) -> &str {
        &self.inner.stable_hash
    }
    /// The resolved mode (`full`, `task`, `minimal`, `none`).
    #[getter]
    fn mode(&self) -> String {
        self.inner.mode.as_str().into()
    }
    /// `o200k_base` or `cl100k_base`.
    #[getter]
    fn tokenizer(&self) -> &str {
        &self.inner.tokenizer
    }
    /// With `[cache] per_turn = "user_message"`, the per-turn sections,
    /// out of the system prompt, for the newest user message (else None).
    #[getter]
    fn turn_context(&self) -> Option<&str> {
        self.inner.turn_context.as_deref()
    }
    /// Whether the token counts are the model's own tokenizer's.
    #[getter]
    fn exact(&self) -> bool {
        self.inner.exact
    }
    /// What fed the stable part, with digests.
    #[getter]
    fn stable_inputs(&self) -> Vec<StableInput> {
        let row = |i: &proem::StableInput| StableInput {
            section: i.section.clone(),
            input: i.input.clone(),
            digest: i.digest.clone(),
        };
        self.inner.stable_inputs.iter().map(row).collect()
    }
    /// Token counts.
    #[getter]
    fn tokens(&self) -> TokenReport {
        let t = self.inner.tokens;
        TokenReport {
            total: t.total,
            stable: t.stable,
            dynamic: t.dynamic,
            budget: t.budget,
            tool_schemas: t.tool_schemas,
        }
    }
    /// Sections in prompt order.
    #[getter]
    fn sections(&self) -> Vec<SectionReport> {
        self.inner
            .sections
            .iter()
            .map(|s| SectionReport {
                id: s.id.clone(),
                source: s.source.clone(),
                zone: s.zone.as_str().into(),
                chars: s.chars,
                tokens: s.tokens,
                truncated: s.truncated,
            })
            .collect()
    }
    /// Bootstrap files in load order.
    #[getter]
    fn files(&self) -> Vec<FileReport> {
        self.inner
            .files
            .iter()
            .map(|f| FileReport {
                name: f.name.clone(),
                raw_chars: f.raw_chars,
                injected_chars: f.injected_chars,
                truncated: f.truncated,
                missing: f.missing,
                source: f.source.clone(),
            })
            .collect()
    }
    /// Plugins in id order.
    #[getter]
    fn plugins(&self) -> Vec<PluginReport> {
        self.inner
            .plugins
            .iter()
            .map(|p| PluginReport {
                id: p.id.clone(),
                status: p.status.to_string(),
                elapsed_us: p.elapsed_us,
                remembered: p.remembered,
            })
            .collect()
    }
    /// Everything worth knowing, in the order it happened.
    #[getter]
    fn diagnostics(&self) -> Vec<Diagnostic> {
        self.inner
            .diagnostics
            .iter()
            .map(|d| Diagnostic {
                level: proem::binding::level_name(d.level).into(),
                code: d.code.clone(),
                message: d.message.clone(),
            })
            .collect()
    }
    /// Exactly what `proem build --format FORMAT` prints for this turn
    /// (`text`, `json`, `anthropic`, `openai`).
    #[pyo3(signature = (format="text"))]
    fn render(&self, format: &str) -> PyResult<String> {
        let request = BuildRequest { format: Some(format_of(format)?), ..BuildRequest::default() };
        // Not strict: rendering cannot fail.
        Ok(proem::render(&self.inner, &request).unwrap_or_default())
    }
    /// `{"system": [...]}`: the stable block with `cache_control` and the
    /// dynamic block, as `proem build --format anthropic` prints it.
    fn to_anthropic<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        turn::to_python(py, &proem::binding::provider_value(&self.inner, Format::Anthropic))
    }
    /// `{"messages": [{"role": "system", "content": ...}]}`, as
    /// `proem build --format openai` prints it.
    fn to_openai<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        turn::to_python(py, &proem::binding::provider_value(&self.inner, Format::Openai))
    }
    /// The JSON report (`proem build --format json`) as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let report = serde_json::to_value(&*self.inner).map_err(|e| PyValueError::new_err(e.to_string()))?;
        turn::to_python(py, &report)
    }
    fn __repr__(&self) -> String {
        format!(
            "Built(tokens={}, stable_hash={:?}, sections={}, diagnostics={})",
            self.inner.tokens.total,
            self.inner.stable_hash,
            self.inner.sections.len(),
            self.inner.diagnostics.len()
        )
    }
    fn __str__(&self) -> &str {
        &self.inner.prompt
    }
}

/// Token counts of the rendered prompt.
#[pyclass(frozen, get_all, module = "proem._proem")]
struct TokenReport {
    total: usize,
    stable: usize,
    dynamic: usize,
    budget: usize,
    tool_schemas: usize,
}

/// One section of the final prompt.
#[pyclass(frozen, get_all, module = "proem._proem")]
struct SectionReport {
    id: String,
    source: String,
    zone: String,
    chars: usize,
    tokens: usize,
    truncated: bool,
}

/// One bootstrap file.
#[pyclass(frozen, get_all, module = "proem._proem")]
struct FileReport {
    name: String,
    raw_chars: usize,
    injected_chars: usize,
    truncated: bool,
    missing: bool,
    source: String,
}

/// One plugin's outcome.
#[pyclass(frozen, get_all, module = "proem._proem")]
struct PluginReport {
    id: String,
    status: String,
    elapsed_us: u64,
    remembered: bool,
}

/// One input of the stable part and its digest.
#[pyclass(frozen, get_all, module = "proem._proem")]
struct StableInput {
    section: String,
    input: String,
    digest: String,
}

/// One thing the build wants its caller to know.
#[pyclass(frozen, get_all, module = "proem._proem")]
struct Diagnostic {
    level: String,
    code: String,
    message: String,
}

/// A field as Python's `repr` writes it.
trait PyRepr {
    fn repr(&self) -> String;
}

impl PyRepr for String {
    fn repr(&self) -> String {
        format!("{self:?}")
    }
}

impl PyRepr for bool {
    fn repr(&self) -> String {
        if *self { "True" } else { "False" }.into()
    }
}

impl PyRepr for usize {
    fn repr(&self) -> String {
        self.to_string()
    }
}

impl PyRepr for u64 {
    fn repr(&self) -> String {
        self.to_string()
    }
}

macro_rules! reprs {
    ($($ty:ident { $($field:ident),* }),* $(,)?) => {$(
        #[pymethods]
        impl $ty {
            fn __repr__(&self) -> String {
                let fields: Vec<String> = vec![$(format!("{}={}", stringify!($field), PyRepr::repr(&self.$field))),*];
                format!("{}({})", stringify!($ty), fields.join(", "))
            }
        }
    )*};
}

reprs! {
    TokenReport { total, stable, dynamic, budget, tool_schemas },
    SectionReport { id, source, zone, chars, tokens, truncated },
    FileReport { name, raw_chars, injected_chars, truncated, missing, source },
    PluginReport { id, status, elapsed_us, remembered },
    StableInput { section, input, digest },
    Diagnostic { level, code, message },
}

#[pymodule]
fn _proem(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeAgent>()?;
    m.add_class::<Built>()?;
    m.add_class::<Request>()?;
    m.add_class::<TokenReport>()?;
    m.add_class::<SectionReport>()?;
    m.add_class::<FileReport>()?;
    m.add_class::<PluginReport>()?;
    m.add_class::<StableInput>()?;
    m.add_function(wrap_pyfunction!(_refused, m)?)?;
    m.add_class::<Diagnostic>()?;
    m.add("ProemError", m.py().get_type::<ProemError_>())?;
    m.add("BOUNDARY_MARKER", proem::BOUNDARY_MARKER)?;
    Ok(())
}

//! The errors a build can end with. Each one names the file or input at fault
//! and what is wrong with it; the CLI prints it and exits with status 1.

use std::path::PathBuf;

/// A build that could not produce a prompt.
#[derive(Debug, thiserror::Error)]
pub enum ProemError {
    /// `proem.toml` (or `--config FILE`) is unreadable or invalid.
    #[error("{}{}: {}{message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default(), key.as_ref().map(|k| format!("key `{k}`: ")).unwrap_or_default())]
    Config {
        /// The config file.
        file: PathBuf,
        /// 1-based line of the offending key, when known.
        line: Option<usize>,
        /// Dotted key path, when known (`budget.tokens`).
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// The agent directory does not exist or cannot be opened.
    #[error("agent directory {}: {message}", path.display())]
    AgentDir {
        /// The directory given.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The tools file (`--tools` or `[tools] file`) is unreadable or invalid.
    #[error("tools file {}: {message}", path.display())]
    Tools {
        /// The tools file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A plugin marked `required` failed to load or to run.
    #[error("{message}")]
    Plugin {
        /// The plugin id.
        id: String,
        /// What happened, naming the plugin.
        message: String,
    },
    /// A per-turn input (flag or request field) is invalid.
    #[error("{input}: {message}")]
    Input {
        /// The input's name, e.g. `--now`.
        input: String,
        /// What is wrong.
        message: String,
    },
    /// The build needs a plugin's code to run (a plugin not described yet,
    /// or a hook whose answer is not kept on disk), and the plugins were
    /// opened with a runtime that runs none
    /// ([`crate::plugin::runtime::AnswersOnly`]: `proem` then hands the
    /// command to `proem-full`).
    #[error("this build needs a plugin's code to run, and this executable runs none")]
    PluginCodeNeeded,
    /// `[budget] tokenizer` names a tokenizer.json, and this executable
    /// loads none (`proem` then hands the command to `proem-full`; a
    /// library user links the `proem` crate, which does).
    #[error("[budget] tokenizer names a tokenizer.json, and this executable has no tokenizer.json loader; run proem-full, or use the proem crate")]
    TokenizerCodeNeeded,
    /// A workspace file or folder, a plugin's binary or a plugin's call
    /// could not be served because the system was out of a resource (file
    /// descriptors, memory): the build fails rather than leave it out, so
    /// what is built never depends on the machine's load. Trying again
    /// later (or with a higher limit) builds it.
    #[error("{path}: {message}: the system is out of file descriptors or memory, so nothing was built rather than built without it; try again, or raise the limit (ulimit -n)")]
    Exhausted {
        /// The workspace-relative path, or the plugin, it was about.
        path: String,
        /// The system's words.
        message: String,
    },
    /// The protected sections alone do not fit the token budget.
    #[error("token budget of {budget} is too small: the protected sections (identity, tooling, safety, workspace) and the cache boundary need {needed} tokens, {over} over the budget; raise [budget] tokens or --budget to at least {needed}")]
    BudgetTooSmall {
        /// Tokens the protected part needs.
        needed: usize,
        /// The budget.
        budget: usize,
        /// `needed - budget`.
        over: usize,
    },
}

impl ProemError {
    /// A config error located at a line and key.
    pub fn config(
        file: impl Into<PathBuf>,
        line: Option<usize>,
        key: Option<String>,
        message: impl Into<String>,
    ) -> Self {
        ProemError::Config { file: file.into(), line, key, message: message.into() }
    }

    /// A bad per-turn input.
    pub fn input(input: impl Into<String>, message: impl Into<String>) -> Self {
        ProemError::Input { input: input.into(), message: message.into() }
    }

    /// Its exit status ([`ExitStatus`]): a build's error is never a usage
    /// error.
    pub fn exit_status(&self) -> ExitStatus {
        ExitStatus::Failed
    }
}

/// How a command that failed ends: the one table of `proem`'s exit
/// statuses. The CLI exits with them (clap's own usage errors exit with
/// [`ExitStatus::Usage`]'s number too), and the language bindings put them
/// on their errors (`exit_code`, `exitCode`), so the same mistake has the
/// same number whichever way it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// The build failed, or an input it read was wrong (a file, a value the
    /// build checks, a plugin): every [`ProemError`].
    Failed,
    /// The command was wrong before anything ran: an unknown flag, a value
    /// its flag's parser refuses, an agent folder that holds no agent; for a
    /// binding, a turn member refused before the build (an unknown field, a
    /// value of the wrong type or out of its range).
    Usage,
}

impl ExitStatus {
    /// The status of a request field refused before the build (`field` as
    /// the body names it: `chat_kind`, `tools[2].name`): what `proem build`
    /// exits with for the same value given as its flag. A flag's value is
    /// refused by clap, a usage error; but `tools`' list is what the CLI
    /// reads from its `--tools` file, and checks as the file's content (a
    /// [`ProemError::Tools`]).
    pub fn of_refused_field(field: &str) -> ExitStatus {
        match field.split(['.', '[']).next() {
            Some("tools") => ExitStatus::Failed,
            _ => ExitStatus::Usage,
        }
    }

    /// The process's exit status.
    pub const fn code(self) -> u8 {
        match self {
            ExitStatus::Failed => 1,
            ExitStatus::Usage => 2,
        }
    }
}

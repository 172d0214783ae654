//! What a plugin knows when a hook is called.
//!
//! [`AgentContext`] is what the stable hooks see: only inputs that stay the
//! same for a whole session. [`TurnContext`] adds the turn (time, channel,
//! chat, extra prompt, per-turn files). Both dereference to [`Session`], the
//! part they share, so `ctx.model`, `ctx.config_str(…)` and
//! `ctx.tool_names()` read the same on either.

use serde_json::Value;
use std::ops::{Deref, DerefMut};

/// How much of the prompt this turn gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// Everything: the main session.
    Full,
    /// Sub-agent and cron sessions.
    Task,
    /// Heartbeats: identity, tools, safety and little else.
    Minimal,
    /// The bare minimum.
    None,
}

/// Direct message or group chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatKind {
    /// A one-to-one chat.
    Direct,
    /// A group chat.
    Group,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// Its name, as the model calls it (case-sensitive).
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON schema of its arguments, as JSON text.
    pub parameters_json: Option<String>,
}

/// A skill from one of the agent's skills folders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// The skill's name.
    pub name: String,
    /// When to use it.
    pub description: String,
    /// Where its SKILL.md is, relative to the agent directory.
    pub location: String,
}

/// The prompt's token budget, to size what a plugin writes without counting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// The whole prompt's budget in tokens.
    pub tokens: u32,
    /// `o200k_base` or `cl100k_base`.
    pub tokenizer: String,
}

/// What every hook sees: the inputs that stay the same for a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// The agent's id.
    pub agent_id: String,
    /// The resolved prompt mode.
    pub mode: Mode,
    /// Provider name (`openai`, `anthropic`, …), when known.
    pub provider: Option<String>,
    /// Model name, when known.
    pub model: Option<String>,
    /// The tools, sorted by name.
    pub tools: Vec<Tool>,
    /// The plugin's `config` table from proem.toml (an empty object when unset).
    pub config: Value,
    /// The prompt's token budget.
    pub budget: Budget,
}

/// What the stable hooks ([`crate::StableHook`], [`crate::BootstrapHook`])
/// see. There is no clock, channel or chat here on purpose: what a stable
/// hook returns sits above the prompt-cache boundary and is remembered by
/// these inputs alone.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentContext {
    /// The inputs every hook sees.
    pub session: Session,
    /// The agent's skills, sorted by name.
    pub skills: Vec<Skill>,
}

/// The turn's time: the only clock a plugin sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnTime {
    /// RFC 3339 with the zone's offset: the local wall time of the turn
    /// (`2026-11-21T10:30:00+01:00` for Europe/Berlin).
    pub rfc3339: String,
    /// The IANA time zone.
    pub timezone: String,
    /// Seconds since 1970-01-01T00:00:00Z.
    pub unix_seconds: i64,
    /// The zone's offset from UTC, in seconds.
    pub utc_offset_seconds: i32,
}

impl TurnTime {
    /// The turn's local date, `YYYY-MM-DD` (in its own zone, not UTC's).
    pub fn local_date(&self) -> &str {
        self.rfc3339.get(..10).unwrap_or("")
    }

    /// The turn's local time of day, `HH:MM`.
    pub fn local_time(&self) -> &str {
        self.rfc3339.get(11..16).unwrap_or("")
    }

    /// The turn's local date and time of day as numbers, in its own zone
    /// (computed from `unix_seconds` and `utc_offset_seconds`, so they
    /// agree with [`TurnTime::local_date`] for a time proem made).
    pub fn local(&self) -> LocalTime {
        let local = local_seconds(self.unix_seconds, self.utc_offset_seconds);
        let (days, secs) = (local.div_euclid(86_400), local.rem_euclid(86_400));
        let (year, month, day) = civil_from_days(days);
        // 1970-01-01 was a Thursday (3 days after a Monday).
        let weekday = Weekday::ALL[(days + 3).rem_euclid(7) as usize];
        let (hour, minute, second) = ((secs / 3600) as u32, (secs % 3600 / 60) as u32, (secs % 60) as u32);
        LocalTime { year, month, day, weekday, hour, minute, second }
    }

    /// The turn's local day of the week.
    pub fn weekday(&self) -> Weekday {
        self.local().weekday
    }

    /// Builds a time from UTC seconds and an offset (what a test needs).
    pub fn at(unix_seconds: i64, utc_offset_seconds: i32, timezone: &str) -> TurnTime {
        let local = unix_seconds + i64::from(utc_offset_seconds);
        let (days, secs) = (local.div_euclid(86_400), local.rem_euclid(86_400));
        let (y, m, d) = civil_from_days(days);
        let sign = if utc_offset_seconds < 0 { '-' } else { '+' };
        let off = utc_offset_seconds.unsigned_abs();
        let zone = if off == 0 { "Z".to_string() } else { format!("{sign}{:02}:{:02}", off / 3600, off % 3600 / 60) };
        TurnTime {
            rfc3339: format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{zone}", secs / 3600, secs % 3600 / 60, secs % 60),
            timezone: timezone.to_string(),
            unix_seconds,
            utc_offset_seconds,
        }
    }
}

/// The most seconds from 1970 a local time is computed for (about 300,000
/// years either way): a turn's time past it is taken as the bound, so no
/// arithmetic below can overflow.
const MAX_LOCAL_SECONDS: i64 = 10_000_000_000_000;

fn local_seconds(unix_seconds: i64, utc_offset_seconds: i32) -> i64 {
    unix_seconds.saturating_add(i64::from(utc_offset_seconds)).clamp(-MAX_LOCAL_SECONDS, MAX_LOCAL_SECONDS)
}

/// A turn's local date and time of day, in its own zone ([`TurnTime::local`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalTime {
    /// The year (proleptic Gregorian).
    pub year: i64,
    /// 1-12.
    pub month: u32,
    /// 1-31.
    pub day: u32,
    /// The day of the week.
    pub weekday: Weekday,
    /// 0-23.
    pub hour: u32,
    /// 0-59.
    pub minute: u32,
    /// 0-59.
    pub second: u32,
}

/// A day of the week.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Weekday {
    /// Monday.
    Monday,
    /// Tuesday.
    Tuesday,
    /// Wednesday.
    Wednesday,
    /// Thursday.
    Thursday,
    /// Friday.
    Friday,
    /// Saturday.
    Saturday,
    /// Sunday.
    Sunday,
}

impl Weekday {
    /// Monday to Sunday (ISO 8601 order).
    pub const ALL: [Weekday; 7] = [
        Weekday::Monday,
        Weekday::Tuesday,
        Weekday::Wednesday,
        Weekday::Thursday,
        Weekday::Friday,
        Weekday::Saturday,
        Weekday::Sunday,
    ];

    /// Its English name, `Monday`.
    pub fn name(self) -> &'static str {
        ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"][self as usize]
    }

    /// ISO 8601's number: Monday 1 to Sunday 7.
    pub fn number_from_monday(self) -> u32 {
        self as u32 + 1
    }

    /// Saturday or Sunday.
    pub fn is_weekend(self) -> bool {
        matches!(self, Weekday::Saturday | Weekday::Sunday)
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// What the turn hook ([`crate::TurnHook`]) sees: the session and the turn.
/// What it returns sits below the prompt-cache boundary.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnContext {
    /// The inputs every hook sees.
    pub session: Session,
    /// The turn's time.
    pub now: TurnTime,
    /// Channel (`telegram`, `discord`, …), when known.
    pub channel: Option<String>,
    /// Direct or group chat, when known.
    pub chat_kind: Option<ChatKind>,
    /// The group's title in a group chat (untrusted text from the chat).
    pub group_title: Option<String>,
    /// The caller's extra prompt for this turn (untrusted text).
    pub extra: Option<String>,
    /// The per-turn workspace files shown this turn (USER.md, HEARTBEAT.md).
    pub files: Vec<File>,
}

impl Deref for AgentContext {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl DerefMut for AgentContext {
    fn deref_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}

impl Deref for TurnContext {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.session
    }
}

impl DerefMut for TurnContext {
    fn deref_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}

impl Default for Session {
    /// Agent `test-agent`, full mode, no provider, no tools, an empty config
    /// object, a 24,000-token o200k budget.
    fn default() -> Session {
        Session {
            agent_id: "test-agent".into(),
            mode: Mode::Full,
            provider: None,
            model: None,
            tools: Vec::new(),
            config: Value::Object(Default::default()),
            budget: Budget { tokens: 24_000, tokenizer: "o200k_base".into() },
        }
    }
}

impl Default for TurnContext {
    /// [`Session::default`] at `2026-01-01T00:00:00Z` in UTC, no channel.
    fn default() -> TurnContext {
        TurnContext {
            session: Session::default(),
            now: TurnTime::at(1_767_225_600, 0, "UTC"),
            channel: None,
            chat_kind: None,
            group_title: None,
            extra: None,
            files: Vec::new(),
        }
    }
}

impl Session {
    /// A string setting from the plugin's config table.
    pub fn config_str(&self, key: &str) -> Option<&str> {
        self.config.get(key).and_then(Value::as_str)
    }

    /// The whole config table read as `T`, a type with
    /// `#[derive(proem_sdk::Config)]`; the error names the setting's path
    /// (`config.limits.max`) and what was expected there. With
    /// `register_plugin!(P, config = T)`, proem refuses at load any config
    /// `T` would not read, so in a hook an `Err` means a native test gave
    /// one.
    pub fn config_as<T: crate::Config>(&self) -> Result<T, crate::ConfigError> {
        T::from_config(&self.config, "config")
    }

    /// A list-of-strings setting; `None` when absent or not a list of strings.
    pub fn config_strings(&self, key: &str) -> Option<Vec<&str>> {
        self.config.get(key)?.as_array()?.iter().map(Value::as_str).collect()
    }

    /// The names of the tools.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_str())
    }

    /// Whether the model is in `family`: the model name (after any
    /// `provider/` or `provider:` prefix, case-insensitively) is `family` or
    /// starts with it followed by `.` or `-`. `gpt-5`, `gpt-5.1`,
    /// `openai/gpt-5-mini` are in `gpt-5`; `gpt-50` is not.
    pub fn model_in_family(&self, family: &str) -> bool {
        let Some(model) = &self.model else { return false };
        let model = model.rsplit(['/', ':']).next().unwrap_or(model).trim().to_ascii_lowercase();
        let family = family.to_ascii_lowercase();
        match model.strip_prefix(&family) {
            Some(rest) => rest.is_empty() || rest.starts_with('.') || rest.starts_with('-'),
            None => false,
        }
    }
}

/// Builds a context for a native unit test, one setting at a time:
/// `AgentContext::builder().model("openai", "gpt-5.1").build()`.
#[derive(Debug, Clone, Default)]
pub struct Builder<C>(C);

impl<C: DerefMut<Target = Session>> Builder<C> {
    /// The resolved mode.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.0.mode = mode;
        self
    }
    /// The provider and model.
    pub fn model(mut self, provider: &str, model: &str) -> Self {
        self.0.provider = Some(provider.into());
        self.0.model = Some(model.into());
        self
    }
    /// A tool, by name and description (kept sorted by name, as proem does).
    pub fn tool(mut self, name: &str, description: &str) -> Self {
        self.0.tools.push(Tool { name: name.into(), description: description.into(), parameters_json: None });
        self.0.tools.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }
    /// The plugin's config table (`serde_json::json!({...})`).
    pub fn config(mut self, config: Value) -> Self {
        self.0.config = config;
        self
    }
    /// The token budget.
    pub fn budget(mut self, tokens: u32) -> Self {
        self.0.budget.tokens = tokens;
        self
    }
    /// The context.
    pub fn build(self) -> C {
        self.0
    }
}

impl Builder<AgentContext> {
    /// A skill, by name and description.
    pub fn skill(mut self, name: &str, description: &str) -> Self {
        let location = format!("skills/{name}/SKILL.md");
        self.0.skills.push(Skill { name: name.into(), description: description.into(), location });
        self.0.skills.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }
}

impl Builder<TurnContext> {
    /// The channel and chat kind.
    pub fn channel(mut self, channel: &str, chat_kind: ChatKind) -> Self {
        self.0.channel = Some(channel.into());
        self.0.chat_kind = Some(chat_kind);
        self
    }
    /// A group chat's title.
    pub fn group_title(mut self, title: &str) -> Self {
        self.0.group_title = Some(title.into());
        self
    }
    /// The caller's extra prompt.
    pub fn extra(mut self, extra: &str) -> Self {
        self.0.extra = Some(extra.into());
        self
    }
    /// The turn's time: seconds since 1970 (UTC), the zone's offset in
    /// seconds and its IANA name.
    pub fn now(mut self, unix_seconds: i64, utc_offset_seconds: i32, timezone: &str) -> Self {
        self.0.now = TurnTime::at(unix_seconds, utc_offset_seconds, timezone);
        self
    }
    /// A per-turn file (USER.md, HEARTBEAT.md).
    pub fn file(mut self, name: &str, content: &str) -> Self {
        self.0.files.push(File::new(name, content));
        self
    }
}

impl AgentContext {
    /// A builder starting from [`AgentContext::default`].
    pub fn builder() -> Builder<AgentContext> {
        Builder::default()
    }
}

impl TurnContext {
    /// A builder starting from [`TurnContext::default`].
    pub fn builder() -> Builder<TurnContext> {
        Builder::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Zeller's congruence (a formula apart from the one `local` uses):
    /// the weekday of a Gregorian date.
    fn zeller(year: i64, month: u32, day: u32) -> Weekday {
        let (y, m) = if month < 3 { (year - 1, i64::from(month) + 12) } else { (year, i64::from(month)) };
        let (k, j) = (y.rem_euclid(100), y.div_euclid(100));
        let h = (i64::from(day) + 13 * (m + 1) / 5 + k + k / 4 + j.div_euclid(4) + 5 * j).rem_euclid(7);
        // h: 0 = Saturday, 1 = Sunday, 2 = Monday, ...
        Weekday::ALL[(h + 5).rem_euclid(7) as usize]
    }

    proptest! {
        /// For any instant and offset: the local parts are the local
        /// date and time `at` writes in RFC 3339, the weekday is Zeller's
        /// for that date, and a day later is the next weekday.
        #[test]
        fn local_parts_and_weekday_agree_with_the_date(
            unix in -5_000_000_000_000i64..5_000_000_000_000,
            offset in -50_400i32..=50_400,
        ) {
            let time = TurnTime::at(unix, offset, "Etc/Test");
            let local = time.local();
            let written = format!("{:04}-{:02}-{:02}", local.year, local.month, local.day);
            if local.year >= 0 && local.year <= 9999 {
                prop_assert_eq!(time.local_date(), written.as_str());
                prop_assert_eq!(time.local_time(), format!("{:02}:{:02}", local.hour, local.minute));
            }
            prop_assert_eq!(local.weekday, zeller(local.year, local.month, local.day));
            let next = TurnTime::at(unix + 86_400, offset, "Etc/Test").weekday();
            prop_assert_eq!(next.number_from_monday(), local.weekday.number_from_monday() % 7 + 1);
        }

        /// Any i64 seconds and i32 offset: no overflow, parts in range.
        #[test]
        fn local_parts_never_overflow(unix in any::<i64>(), offset in any::<i32>()) {
            let time = TurnTime { rfc3339: String::new(), timezone: String::new(), unix_seconds: unix, utc_offset_seconds: offset };
            let local = time.local();
            prop_assert!((1..=12).contains(&local.month) && (1..=31).contains(&local.day));
            prop_assert!(local.hour < 24 && local.minute < 60 && local.second < 60);
        }
    }

    #[test]
    fn a_known_monday_in_berlin() {
        // 2026-11-23T08:15:00+01:00, a Monday; 23:30 UTC on Sunday the
        // 22nd is already Monday in Berlin.
        let time = TurnTime::at(1_795_418_100, 3600, "Europe/Berlin");
        assert_eq!(time.local_date(), "2026-11-23");
        assert_eq!((time.weekday(), time.weekday().name()), (Weekday::Monday, "Monday"));
        let late = TurnTime::at(1_795_390_200, 3600, "Europe/Berlin");
        assert_eq!((late.local().day, late.weekday()), (23, Weekday::Monday));
        assert!(!late.weekday().is_weekend());
    }

    fn with_model(model: &str) -> AgentContext {
        AgentContext::builder().model("any", model).build()
    }

    #[test]
    fn model_families() {
        for yes in ["gpt-5", "gpt-5.1", "GPT-5-mini", "openai/gpt-5.2-codex", "gpt-5-2025-08-07"] {
            assert!(with_model(yes).model_in_family("gpt-5"), "{yes}");
        }
        for no in ["gpt-50", "gpt-4o", "gpt-5x", "my-gpt-5", "", "openai/gpt-4.1"] {
            assert!(!with_model(no).model_in_family("gpt-5"), "{no}");
        }
    }

    #[test]
    fn a_test_context_in_one_expression() {
        let ctx = TurnContext::builder()
            .model("openai", "gpt-5.1")
            .channel("telegram", ChatKind::Group)
            .tool("gpio_write", "Sets a pin.")
            .tool("exec", "Runs a command.")
            .config(serde_json::json!({"patterns": ["gpio_*"]}))
            .now(1_763_796_600, -8 * 3600, "America/Los_Angeles")
            .build();
        assert_eq!(ctx.tool_names().collect::<Vec<_>>(), ["exec", "gpio_write"]);
        assert_eq!(ctx.config_strings("patterns"), Some(vec!["gpio_*"]));
        assert_eq!(ctx.now.rfc3339, "2025-11-21T23:30:00-08:00");
        assert_eq!(ctx.now.local_date(), "2025-11-21", "the turn's own date, not UTC's");
        assert_eq!(ctx.now.local_time(), "23:30");
        assert_eq!(AgentContext::default().mode, Mode::Full);
    }

    #[test]
    fn turn_times_agree_with_known_dates() {
        // (unix seconds, offset, expected RFC 3339), checked against `date -u -d @N`.
        let cases = [
            (0, 0, "1970-01-01T00:00:00Z"),
            (951_782_400, 0, "2000-02-29T00:00:00Z"),
            (1_767_225_599, 3600, "2026-01-01T00:59:59+01:00"),
            (-1, 0, "1969-12-31T23:59:59Z"),
            (1_709_164_800, 19_800, "2024-02-29T05:30:00+05:30"),
        ];
        for (secs, offset, want) in cases {
            assert_eq!(TurnTime::at(secs, offset, "X").rfc3339, want, "{secs}");
        }
    }
}

/// A bootstrap file as `agent:bootstrap` hooks see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Workspace-relative name (`SOUL.md`, `AGENTS.md`, …).
    pub name: String,
    /// Its text; `None` when the file is missing.
    pub content: Option<String>,
}

impl File {
    /// A file with content.
    pub fn new(name: &str, content: impl Into<String>) -> File {
        File { name: name.to_string(), content: Some(content.into()) }
    }
}

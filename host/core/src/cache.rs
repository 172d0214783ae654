//! `[cache]`: how a build is cut into the blocks a provider's prompt cache
//! can reuse, and which provider's caching the request is shaped for.
//!
//! A request is, in prefix order: the tools, the stable part (the same for
//! every turn of the agent), the session part (the same for every turn of
//! one session: channel, chat, model, USER.md), the per-turn part (the
//! date, the extra prompt, `turn` hooks' sections) and the conversation.
//! A provider reuses a prefix, so each block must not change unless one
//! before it did (the rule of [`crate::section::Tier`]). The profiles say
//! how a provider is told where the blocks end:
//!
//! - `anthropic`: up to four `cache_control` breakpoints (tools, stable,
//!   session, conversation), each with a TTL; Anthropic requires every 1 h
//!   entry before every 5 min one, which [`Ttls::effective`] guarantees;
//! - `openai`: automatic prefix caching, routed by a `prompt_cache_key`
//!   derived from the stable hash ([`prompt_cache_key`]);
//! - `prefix` (DeepSeek, llama.cpp, Ollama, vLLM): one plain prefix, no
//!   markers, nothing moved.
//!
//! `per_turn = "user_message"` takes the per-turn part out of the system
//! prompt: it comes back as `turn_context`, for the runtime to prepend to
//! the newest user message, so the system prompt and the whole
//! conversation before it stay one cacheable prefix.

use serde::{Deserialize, Serialize};

/// `[cache]`
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConfig {
    /// Which provider's caching `--format provider` shapes the request
    /// for (default `auto`: from the provider's name).
    pub profile: ProfileChoice,
    /// Where the per-turn part goes (default `system`).
    pub per_turn: PerTurn,
    /// Whether the session part is a block of its own, between the stable
    /// part and the per-turn part (default off: it reorders the dynamic part,
    /// and the presets print their systems' order; docs/PERFORMANCE.md
    /// "Cache reuse" has the figures with it on).
    pub session_tier: bool,
    /// The Anthropic profile's TTL per breakpoint.
    pub ttl: Ttls,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            profile: ProfileChoice::Auto,
            per_turn: PerTurn::System,
            session_tier: false,
            ttl: Ttls::default(),
        }
    }
}

impl CacheConfig {
    /// How the dynamic sections are joined.
    pub fn tiering(&self) -> Tiering {
        Tiering { session_tier: self.session_tier, per_turn: self.per_turn }
    }

    /// The TTL ordering Anthropic requires, as a config error: the
    /// `[cache] ttl` key that breaks it and the fix.
    pub fn check(&self) -> Result<(), (String, String)> {
        let t = &self.ttl;
        let order =
            [("tools", t.tools), ("stable", t.stable), ("session", t.session), ("conversation", t.conversation)];
        for pair in order.windows(2) {
            let ((before, a), (after, b)) = (pair[0], pair[1]);
            if b > a {
                return Err((
                    format!("ttl.{after}"),
                    format!(
                        "{after} is {} but {before}, earlier in the request, is {}: Anthropic requires every 1h \
                         breakpoint before every 5m one (set {after} = \"5m\" or {before} = \"1h\")",
                        b.as_str(),
                        a.as_str()
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// `[cache] profile`.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ProfileChoice {
    /// From the provider's name ([`Profile::for_provider`]).
    #[default]
    Auto,
    /// Always Anthropic's.
    Anthropic,
    /// Always OpenAI's.
    Openai,
    /// Always a plain prefix.
    Prefix,
}

/// A provider's model of prompt caching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// `cache_control` breakpoints with TTLs.
    Anthropic,
    /// Automatic prefix caching with a `prompt_cache_key`.
    Openai,
    /// One plain prefix (DeepSeek, llama.cpp, Ollama, vLLM, …).
    Prefix,
}

impl Profile {
    /// The profile for a provider name: Anthropic's API (and Claude on
    /// Bedrock or Vertex) breakpoints, OpenAI's (and Azure OpenAI's) key,
    /// any other a plain prefix, which every prefix cache reuses.
    pub fn for_provider(name: Option<&str>) -> Profile {
        let name = name.unwrap_or("").to_ascii_lowercase();
        if name.contains("anthropic") || name.contains("claude") {
            Profile::Anthropic
        } else if name == "openai" || name.starts_with("azure") {
            Profile::Openai
        } else {
            Profile::Prefix
        }
    }

    /// The name in formats and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Anthropic => "anthropic",
            Profile::Openai => "openai",
            Profile::Prefix => "prefix",
        }
    }
}

impl ProfileChoice {
    /// The profile in force for `provider`.
    pub fn resolve(self, provider: Option<&str>) -> Profile {
        match self {
            ProfileChoice::Auto => Profile::for_provider(provider),
            ProfileChoice::Anthropic => Profile::Anthropic,
            ProfileChoice::Openai => Profile::Openai,
            ProfileChoice::Prefix => Profile::Prefix,
        }
    }
}

/// `[cache] per_turn`: where the per-turn part goes.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum PerTurn {
    /// At the end of the system prompt, below the session part.
    #[default]
    System,
    /// Out of the system prompt: returned as `turn_context`, for the
    /// runtime to prepend to the newest user message.
    UserMessage,
}

/// A cache entry's lifetime on Anthropic's API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
pub enum Ttl {
    /// 5 minutes (refreshed on each hit; writes cost 1.25× input).
    #[serde(rename = "5m")]
    FiveMinutes,
    /// 1 hour (writes cost 2× input).
    #[serde(rename = "1h")]
    OneHour,
}

impl Ttl {
    /// As the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Ttl::FiveMinutes => "5m",
            Ttl::OneHour => "1h",
        }
    }

    /// In seconds.
    pub fn seconds(self) -> u64 {
        match self {
            Ttl::FiveMinutes => 300,
            Ttl::OneHour => 3600,
        }
    }
}

/// `[cache] ttl`: the TTL of each Anthropic breakpoint, in request order.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Ttls {
    /// On the last tool (advice for the runtime, which sends the tools).
    pub tools: Ttl,
    /// On the stable block.
    pub stable: Ttl,
    /// On the session block.
    pub session: Ttl,
    /// On the newest user message (advice for the runtime).
    pub conversation: Ttl,
}

impl Default for Ttls {
    /// The stable part and the tools live an hour (an agent woken every 30
    /// minutes still hits them); the session and the conversation, which
    /// a burst of turns reuses, five minutes.
    fn default() -> Self {
        Ttls { tools: Ttl::OneHour, stable: Ttl::OneHour, session: Ttl::FiveMinutes, conversation: Ttl::FiveMinutes }
    }
}

impl Ttls {
    /// The TTLs as sent, in request order (tools, stable, session,
    /// conversation): each at most the one before it, so a 1 h entry never
    /// follows a 5 min one whatever the config holds (config validation
    /// refuses such a config; this is the rule every renderer goes through).
    pub fn effective(&self) -> [Ttl; 4] {
        let mut out = [self.tools, self.stable, self.session, self.conversation];
        let mut longest = Ttl::OneHour;
        for ttl in &mut out {
            *ttl = (*ttl).min(longest);
            longest = *ttl;
        }
        out
    }
}

/// How the dynamic sections are joined (see [`crate::render::join_in`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tiering {
    /// The session sections first, as a block of their own.
    pub session_tier: bool,
    /// Where the per-turn sections go.
    pub per_turn: PerTurn,
}

impl Tiering {
    /// One dynamic part in layout order (proem before `[cache]`).
    pub const NONE: Tiering = Tiering { session_tier: false, per_turn: PerTurn::System };
}

/// What the output formats need to shape a build's request: the profile
/// `--format provider` uses and the Anthropic TTLs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachePlan {
    /// The profile in force (`[cache] profile`, else from the provider).
    pub profile: Profile,
    /// The Anthropic TTLs, in request order, as sent.
    pub ttls: [Ttl; 4],
}

impl Default for CachePlan {
    fn default() -> Self {
        CachePlan { profile: Profile::Prefix, ttls: Ttls::default().effective() }
    }
}

/// OpenAI's `prompt_cache_key` for a stable hash: requests with one key
/// and one prefix are routed to the same cache. Agents whose stable parts
/// are byte-identical share it, as they share the cached prefix.
pub fn prompt_cache_key(stable_hash: &str) -> String {
    let hex: String = stable_hash.chars().filter(char::is_ascii_hexdigit).take(32).collect();
    format!("proem-{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ttl() -> impl Strategy<Value = Ttl> {
        prop_oneof![Just(Ttl::FiveMinutes), Just(Ttl::OneHour)]
    }

    proptest! {
        /// Whatever the config, the TTLs sent never put a 1 h entry after a
        /// 5 min one; a config the check passes is sent as written, and one
        /// it refuses names the first key out of order.
        #[test]
        fn ttls_sent_never_increase(tools in ttl(), stable in ttl(), session in ttl(), conversation in ttl()) {
            let ttl = Ttls { tools, stable, session, conversation };
            let sent = ttl.effective();
            prop_assert!(sent.windows(2).all(|w| w[1] <= w[0]), "{:?}", sent);
            let config = CacheConfig { ttl, ..CacheConfig::default() };
            match config.check() {
                Ok(()) => prop_assert_eq!(sent, [tools, stable, session, conversation]),
                Err((key, why)) => {
                    prop_assert!(key.starts_with("ttl."), "{}", key);
                    prop_assert!(why.contains("1h") && why.contains("5m"), "{}", why);
                }
            }
        }
    }

    #[test]
    fn providers_pick_their_profile_and_the_key_comes_from_the_hash() {
        assert_eq!(Profile::for_provider(Some("anthropic")), Profile::Anthropic);
        assert_eq!(Profile::for_provider(Some("Claude-Bedrock")), Profile::Anthropic);
        assert_eq!(Profile::for_provider(Some("openai")), Profile::Openai);
        assert_eq!(Profile::for_provider(Some("azure-openai")), Profile::Openai);
        for other in [Some("deepseek"), Some("ollama"), Some("vllm"), Some("llama.cpp"), None] {
            assert_eq!(Profile::for_provider(other), Profile::Prefix);
        }
        assert_eq!(ProfileChoice::Prefix.resolve(Some("anthropic")), Profile::Prefix);
        let hash = "ab".repeat(32);
        let key = prompt_cache_key(&hash);
        assert_eq!(key, format!("proem-{}", &hash[..32]));
        assert_ne!(key, prompt_cache_key(&"cd".repeat(32)));
    }

    #[test]
    fn the_config_reads_its_keys_and_refuses_a_short_ttl_before_a_long_one() {
        let c: CacheConfig =
            toml::from_str("profile = \"openai\"\nper_turn = \"user_message\"\nsession_tier = false\n").unwrap();
        assert_eq!((c.profile, c.per_turn, c.session_tier), (ProfileChoice::Openai, PerTurn::UserMessage, false));
        let c: CacheConfig = toml::from_str("ttl = { stable = \"5m\", session = \"1h\" }").unwrap();
        let (key, why) = c.check().unwrap_err();
        assert_eq!(key, "ttl.session");
        assert!(why.contains("set session = \"5m\" or stable = \"1h\""), "{why}");
        assert!(toml::from_str::<CacheConfig>("ttl = { stable = \"2h\" }").is_err());
        assert!(toml::from_str::<CacheConfig>("per_turn = \"assistant\"").is_err());
    }
}

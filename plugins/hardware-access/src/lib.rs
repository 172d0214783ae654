//! hardware-access: tells the model which hardware tools it is authorised to
//! use, naming exactly the ones present this turn.
//!
//! Config (`[[plugins]] config = { patterns = [...] }`): tool names or globs
//! (`*`, `?`). Without it, [`DEFAULT_PATTERNS`] is used. No matching tool, no
//! section.

use proem_sdk::{matching_tools, AgentContext, File, Plugin, Section, StableHook, StableOutput};

/// The built-in patterns: the seven classic hardware tools and three families.
pub const DEFAULT_PATTERNS: [&str; 10] = [
    "gpio_read",
    "gpio_write",
    "arduino_upload",
    "hardware_memory_map",
    "hardware_board_info",
    "hardware_memory_read",
    "hardware_capabilities",
    "gpio_*",
    "i2c_*",
    "pico_*",
];

/// The section's id and where it goes: right after the tool list.
pub const SECTION_ID: &str = "hardware_access";

/// The plugin.
#[derive(Default)]
pub struct HardwareAccess;

impl Plugin for HardwareAccess {}

/// The tool list is a stable input, so the section is stable too.
impl StableHook for HardwareAccess {
    fn stable(&self, ctx: &AgentContext, _files: &[File]) -> Result<StableOutput, String> {
        let patterns: Vec<&str> = match ctx.config.get("patterns") {
            None => DEFAULT_PATTERNS.to_vec(),
            Some(_) => ctx.config_strings("patterns").ok_or("config `patterns` must be a list of strings")?,
        };
        let present = matching_tools(&patterns, ctx.tool_names());
        Ok(render(&present)
            .map(|body| Section::after("tooling", SECTION_ID, body))
            .into_iter()
            .collect::<Vec<_>>()
            .into())
    }
}

/// The section body for the hardware tools present, or `None` when there are none.
pub fn render(present: &[&str]) -> Option<String> {
    if present.is_empty() {
        return None;
    }
    let list: Vec<String> = present.iter().map(|t| format!("- `{}`", t.replace('`', "'"))).collect();
    Some(format!(
        "## Hardware Access\n\
         You are connected to hardware the user owns and has set up for you. These hardware tools are \
         authorised for this session:\n{}\n\
         Use them when the user asks: reading pins, registers, memory maps or board information and \
         driving outputs are expected here, not a security concern, so do not refuse or add warnings \
         about them. Use only the tools listed above for hardware; if a task needs one that is not \
         listed, say which.",
        list.join("\n")
    ))
}

proem_sdk::register_plugin!(HardwareAccess);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_exactly_the_present_tools() {
        let body = render(&["gpio_write", "i2c_scan"]).unwrap();
        assert!(body.contains("- `gpio_write`\n- `i2c_scan`\n"));
        assert!(!body.contains("gpio_read"));
        assert!(render(&[]).is_none());
    }

    #[test]
    fn backticks_in_names_cannot_break_the_list() {
        let body = render(&["gpio_`x`"]).unwrap();
        assert!(body.contains("`gpio_'x'`"));
    }
}

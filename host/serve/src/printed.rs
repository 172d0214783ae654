//! Builds as printed, kept for the next request of the same build.
//!
//! A request the build memo answers gets the very build an earlier one got
//! (the same `Arc`). Printing it again in the same format gives the same
//! bytes and the same tag, so the service keeps the last few printings:
//! the body is handed out shared (no copy of the ~60-100 KB prompt) and
//! its tag is not hashed again. Keyed by the build's `Arc` (held here, so
//! no other build can take its address while it is kept) and the format;
//! at most [`KEPT`] printings, the oldest dropped first.

use axum::body::Bytes;
use proem_core::render::Format;
use proem_core::sync::Lock;
use std::collections::VecDeque;
use std::sync::Arc;

/// Printings kept: the memo's hits in flight across agents and formats.
/// Memory: at most this many answers (each held by the build memo too).
pub const KEPT: usize = 16;

/// A build printed in a format, with its entity tag.
#[derive(Debug, PartialEq, Eq)]
pub struct Printing {
    /// The body, exactly as `proem build --format F` prints it.
    pub text: Bytes,
    /// [`crate::answer::etag`] of `text`.
    pub tag: String,
}

impl Printing {
    /// `text` with its tag.
    pub fn new(text: String) -> Printing {
        let tag = crate::answer::etag(text.as_bytes());
        Printing { text: Bytes::from(text), tag }
    }
}

/// A kept printing: the build (held), the format, the printing.
type Entry<B> = (Arc<B>, Format, Arc<Printing>);

/// The last printings, by build and format.
pub struct Printed<B> {
    kept: Lock<VecDeque<Entry<B>>>,
}

impl<B> Default for Printed<B> {
    fn default() -> Self {
        Printed { kept: Lock::new(VecDeque::with_capacity(KEPT)) }
    }
}

impl<B> Printed<B> {
    /// `built` printed in `format`: the kept printing when there is one,
    /// else `print`'s, kept instead of the oldest. `print` runs without
    /// the lock held; an error is returned and nothing is kept.
    pub fn get_or_print<E>(
        &self,
        built: &Arc<B>,
        format: Format,
        print: impl FnOnce() -> Result<String, E>,
    ) -> Result<Arc<Printing>, E> {
        let found = |kept: &VecDeque<Entry<B>>| {
            kept.iter().find(|(b, f, _)| Arc::ptr_eq(b, built) && *f == format).map(|(_, _, p)| p.clone())
        };
        if let Some(printing) = found(&self.kept.lock()) {
            return Ok(printing);
        }
        let printing = Arc::new(Printing::new(print()?));
        let mut kept = self.kept.lock();
        if found(&kept).is_none() {
            if kept.len() >= KEPT {
                kept.pop_front();
            }
            kept.push_back((built.clone(), format, printing.clone()));
        }
        Ok(printing)
    }

    /// How many printings are kept.
    pub fn len(&self) -> usize {
        self.kept.lock().len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FORMATS: [Format; 6] =
        [Format::Text, Format::Json, Format::Anthropic, Format::Openai, Format::Prefix, Format::Provider];

    /// What printing build `b` in format `f` gives (a stand-in for
    /// `request::respond`: different for every pair).
    fn print(b: &str, f: Format) -> String {
        format!("{b} as {f:?}")
    }

    proptest! {
        /// Whatever the order of requests, a printing handed out is the
        /// one printing the build gives now, and at most KEPT are kept.
        #[test]
        fn a_kept_printing_is_what_printing_gives(asks in proptest::collection::vec((0usize..24, 0usize..6), 1..200)) {
            // Builds are told apart by identity, not content: two of them
            // print alike.
            let builds: Vec<Arc<String>> = (0..24).map(|i| Arc::new(format!("build {}", i / 2))).collect();
            let printed = Printed::default();
            let mut printings = 0;
            for (b, f) in asks {
                let (build, format) = (&builds[b], FORMATS[f]);
                let got = printed.get_or_print(build, format, || {
                    printings += 1;
                    Ok::<_, ()>(print(build, format))
                }).unwrap();
                prop_assert_eq!(&*got, &Printing::new(print(build, format)));
                prop_assert!(printed.len() <= KEPT);
            }
            prop_assert!(printings >= 1);
        }
    }

    #[test]
    fn the_same_build_and_format_is_printed_once_and_an_error_is_not_kept() {
        let printed = Printed::default();
        let build = Arc::new("b".to_string());
        let mut printings = 0;
        for _ in 0..3 {
            let got = printed.get_or_print(&build, Format::Text, || {
                printings += 1;
                Ok::<_, ()>("text".to_string())
            });
            assert_eq!(got.unwrap().text, Bytes::from_static(b"text"));
        }
        assert_eq!(printings, 1);
        assert_eq!(printed.get_or_print(&build, Format::Json, || Err::<String, _>("no")), Err("no"));
        assert_eq!(printed.len(), 1);
        // Another build with the same content is another key.
        let twin = Arc::new("b".to_string());
        printed.get_or_print(&twin, Format::Text, || Ok::<_, ()>("text".to_string())).unwrap();
        assert_eq!(printed.len(), 2);
    }
}

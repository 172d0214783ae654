//! IANA time zones, from the tz database built into the binary (jiff's
//! bundled copy), so a turn's date is the same on every machine.
//!
//! A build shows the turn's date in its zone, the zone's name and, when it
//! has a lettered one, its abbreviation then ("CET", "PDT"). The instant
//! itself stays a chrono `DateTime<FixedOffset>`: the zone only supplies
//! the offset and abbreviation at that instant.
//!
//! jiff's database is a few hundred KB of TZif data read in place; the
//! previous one (chrono-tz) was ~1 MB of tables of pointers that every
//! process relocated at start-up (docs/PERFORMANCE.md).

use crate::error::ProemError;
use chrono::{DateTime, FixedOffset};

/// A time zone of the IANA database, by its exact name.
#[derive(Debug, Clone)]
pub struct Zone {
    name: String,
    zone: jiff::tz::TimeZone,
}

/// An instant as seen in a [`Zone`].
#[derive(Debug, Clone)]
pub struct Local {
    /// The instant, with the zone's offset then.
    pub time: DateTime<FixedOffset>,
    /// The zone's abbreviation then, when it is letters only (some zones
    /// only have an offset such as "+03").
    pub abbreviation: Option<String>,
}

impl Zone {
    /// The zone named exactly `name` (surrounding spaces ignored; case
    /// matters, as in the database: `Europe/Berlin`, `UTC`).
    pub fn parse(name: &str) -> Result<Zone, ProemError> {
        let name = name.trim();
        let zone = jiff::tz::TimeZone::get(name).ok().filter(|z| z.iana_name() == Some(name));
        zone.map(|zone| Zone { name: name.to_string(), zone }).ok_or_else(|| {
            ProemError::input("--timezone", format!("{name:?} is not an IANA time zone name (e.g. Europe/Berlin, UTC)"))
        })
    }

    /// The zone's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `now` in this zone.
    pub fn local(&self, now: DateTime<FixedOffset>) -> Result<Local, ProemError> {
        let out_of_range = || {
            ProemError::input(
                "--now",
                format!("{} is outside the years the time zone database covers", now.to_rfc3339()),
            )
        };
        let instant =
            jiff::Timestamp::new(now.timestamp(), now.timestamp_subsec_nanos() as i32).map_err(|_| out_of_range())?;
        let info = self.zone.to_offset_info(instant);
        let offset = FixedOffset::east_opt(info.offset().seconds()).ok_or_else(out_of_range)?;
        let abbreviation = info.abbreviation();
        Ok(Local {
            time: now.with_timezone(&offset),
            abbreviation: abbreviation.chars().all(|c| c.is_ascii_alphabetic()).then(|| abbreviation.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(rfc3339: &str) -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339(rfc3339).unwrap()
    }

    #[test]
    fn names_are_exact_and_offsets_follow_the_rules() {
        assert!(Zone::parse("Mars/Olympus").is_err());
        assert!(Zone::parse("europe/berlin").is_err(), "case matters, as it did");
        assert!(Zone::parse("").is_err());
        let berlin = Zone::parse(" Europe/Berlin ").unwrap();
        assert_eq!(berlin.name(), "Europe/Berlin");
        let winter = berlin.local(at("2026-01-15T23:30:00Z")).unwrap();
        assert_eq!(winter.time.to_rfc3339(), "2026-01-16T00:30:00+01:00");
        assert_eq!(winter.abbreviation.as_deref(), Some("CET"));
        let summer = berlin.local(at("2026-07-15T12:00:00-07:00")).unwrap();
        assert_eq!(summer.time.to_rfc3339(), "2026-07-15T21:00:00+02:00");
        assert_eq!(summer.abbreviation.as_deref(), Some("CEST"));
        // Only an offset, no lettered abbreviation.
        let istanbul = Zone::parse("Europe/Istanbul").unwrap().local(at("2026-03-01T00:00:00Z")).unwrap();
        assert_eq!((istanbul.time.offset().local_minus_utc(), istanbul.abbreviation), (3 * 3600, None));
        let utc = Zone::parse("UTC").unwrap().local(at("2026-11-21T09:30:00.5+05:30")).unwrap();
        assert_eq!(utc.time.to_rfc3339(), "2026-11-21T04:00:00.500+00:00");
        assert_eq!(utc.abbreviation.as_deref(), Some("UTC"));
    }

    #[test]
    fn the_far_ends_of_the_calendar_are_an_error_or_a_time_never_a_panic() {
        let zone = Zone::parse("Pacific/Kiritimati").unwrap();
        for t in
            ["0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00+23:59"]
        {
            let _ = zone.local(at(t));
        }
        assert_eq!(zone.local(at("2026-11-21T09:30:00Z")).unwrap().time.offset().local_minus_utc(), 14 * 3600);
    }

    proptest::proptest! {
        /// Any zone of the database, any instant the RFC 3339 parser takes:
        /// the zone parses by its exact name, and the local time is the
        /// same instant at the database's offset, or an input error.
        #[test]
        fn any_zone_at_any_instant_keeps_the_instant(pick in 0usize..10_000, seconds in -62_167_219_200i64..253_402_300_799, nanos in 0u32..1_000_000_000) {
            let names: Vec<String> = jiff::tz::db().available().map(|n| n.to_string()).collect();
            proptest::prop_assume!(!names.is_empty());
            let name = &names[pick % names.len()];
            let zone = Zone::parse(name).unwrap();
            proptest::prop_assert_eq!(zone.name(), name.as_str());
            let now = chrono::DateTime::from_timestamp(seconds, nanos).unwrap().fixed_offset();
            if let Ok(local) = zone.local(now) {
                proptest::prop_assert_eq!(local.time, now, "the same instant");
                let expected = jiff::tz::TimeZone::get(name).unwrap()
                    .to_offset(jiff::Timestamp::new(seconds, nanos as i32).unwrap());
                proptest::prop_assert_eq!(local.time.offset().local_minus_utc(), expected.seconds());
            }
        }
    }
}

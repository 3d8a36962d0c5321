//! Scenario files with one value replaced by an extreme one (0, -1, the largest integers, a huge
//! float, NaN, a string where a number goes...): the reader refuses it with a located error, or
//! accepts it; and, in the simulated build, a file it accepts runs to a verdict, never a crash of
//! the run (a panic, madsim's time limit) and never a panic of the test. Byte-level mutations are
//! `scenario_files.rs`'s; this one reaches the resolver's range checks, which random bytes
//! rarely get past the TOML grammar to reach.

use std::path::Path;

use proptest::prelude::*;

use crate::proptest_config;
use proptest_config::fixed;
use zkh_scenarios::scenario::parse;

/// Every scenario file the project ships, with its text.
fn shipped_texts() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut texts = Vec::new();
    for folder in ["catalog", "regressions", "findings"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(folder))
            .expect("a folder of scenarios")
            .map(|entry| entry.expect("an entry").path())
            .filter(|path| path.extension().is_some_and(|e| e == "toml"))
            .collect();
        paths.sort();
        for path in paths {
            texts.push(std::fs::read_to_string(path).expect("a scenario file"));
        }
    }
    texts
}

/// Where each value of `text` is: the byte ranges of what follows `key = ` up to the end of the
/// value (a number, a word or a quoted string), in the order they appear.
fn value_spans(text: &str) -> Vec<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut at = 0;
    while let Some(found) = text[at..].find(" = ") {
        let start = at + found + 3;
        let mut end = start;
        if bytes.get(start) == Some(&b'"') {
            end = text[start + 1..]
                .find('"')
                .map_or(text.len(), |quote| start + quote + 2);
        } else {
            while end < bytes.len()
                && (bytes[end].is_ascii_alphanumeric() || b"._+-".contains(&bytes[end]))
            {
                end += 1;
            }
        }
        if end > start {
            spans.push(start..end);
        }
        at = start;
    }
    spans
}

/// The extreme values tried in place of a scenario's own.
const EXTREMES: &[&str] = &[
    "0",
    "1",
    "-1",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967295",
    "4294967296",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "-inf",
    "0.0",
    "true",
    "\"\"",
    "\"/\"",
    "[]",
    "{}",
];

/// The integers among [`EXTREMES`], and values near the resolver's bounds: most of them get
/// past the reader, so the run test runs them.
#[cfg_attr(not(madsim), allow(dead_code))]
const EXTREME_INTEGERS: &[&str] = &[
    "0",
    "1",
    "2",
    "999",
    "40000",
    "499999",
    "500000",
    "4294967295",
    "18446744073709551615",
];

/// `text` with its `value`-th value (modulo their number) replaced by `extreme`.
fn with_value(text: &str, value: prop::sample::Index, extreme: &str) -> String {
    let numeric = extreme.bytes().all(|b| b.is_ascii_digit());
    let spans: Vec<_> = value_spans(text)
        .into_iter()
        .filter(|span| !numeric || text.as_bytes()[span.start].is_ascii_digit())
        .collect();
    if spans.is_empty() {
        return text.to_owned();
    }
    let span = value.get(&spans).clone();
    format!("{}{extreme}{}", &text[..span.start], &text[span.end..])
}

#[test]
fn the_value_finder_sees_the_values_of_a_file() {
    let text = "[workload]\nrecipe = \"lock\"\nclients = 3\n\n[phases]\nfault_ms = 20000\n";
    let found: Vec<&str> = value_spans(text).into_iter().map(|s| &text[s]).collect();
    assert_eq!(found, ["\"lock\"", "3", "20000"]);
}

#[test]
fn phases_whose_sum_overflows_are_refused_not_wrapped() {
    let text = "[workload]\nrecipe = \"lock\"\n\n[phases]\nfault_ms = 18446744073709551615\n";
    let error = parse("o.toml", "o", text).expect_err("refused").to_string();
    assert_eq!(
        error,
        "o.toml:5:12: phases.fault_ms: a run may last 500000 ms at most, found \
         18446744073709551615"
    );
    // The field named is the one too long, at its own line and column.
    let text = "[workload]\nrecipe = \"lock\"\n\n[phases]\nfault_ms = 1000\nliveness_ms = \
                18446744073709551615\n";
    let error = parse("l.toml", "l", text).expect_err("refused").to_string();
    assert_eq!(
        error,
        "l.toml:6:15: phases.liveness_ms: a run may last 500000 ms at most, found \
         18446744073709551615"
    );
    let text = "[workload]\nrecipe = \"lock\"\n\n[phases]\nfault_ms = 300000\nliveness_ms = \
                300000\n";
    let error = parse("s.toml", "s", text).expect_err("refused").to_string();
    assert!(
        error.starts_with("s.toml:6:15: phases.liveness_ms: the fault and liveness phases"),
        "{error}"
    );
    let text = "[workload]\nrecipe = \"lock\"\n\n[[faults.scripted]]\nat_ms = 1000\nfault = { \
                kind = \"pause-client\", client = 0, duration_ms = 18446744073709551615 }\n";
    let error = parse("p.toml", "p", text).expect_err("refused").to_string();
    assert!(
        error.starts_with("p.toml:6:")
            && error.contains("faults.scripted[0].fault.duration_ms: expected 1 to 500000 ms"),
        "{error}"
    );
}

proptest! {
    #![proptest_config(fixed(3000))]

    /// Any shipped file with one value made extreme: parsed, or refused at a line and column
    /// inside the text; never a panic.
    #[test]
    fn an_extreme_value_is_read_or_refused_never_a_panic(
        file in any::<prop::sample::Index>(),
        value in any::<prop::sample::Index>(),
        extreme in prop::sample::select(EXTREMES),
    ) {
        let texts = shipped_texts();
        let text = with_value(file.get::<String>(&texts), value, extreme);
        match parse("v.toml", "v", &text) {
            Err(error) => {
                prop_assert!(error.line >= 1 && error.line <= text.lines().count() + 1, "{error}");
            }
            // What keeps an accepted file's run inside madsim's time limit.
            Ok((_, resolved)) => prop_assert!(
                resolved
                    .fault_ms
                    .checked_add(resolved.liveness_ms)
                    .is_some_and(|total| total <= 500_000),
                "{text}"
            ),
        }
    }
}

/// In the simulated build, accepted files run: a run ends with a verdict, not a crash.
#[cfg(madsim)]
mod runs {
    use super::*;
    use zkh_reports::types::Outcome;
    use zkh_scenarios::runner::run;

    proptest! {
        #![proptest_config(fixed(120))]

        /// A file with one number made extreme that the reader accepts runs seed 0 to a
        /// verdict.
        #[test]
        fn an_accepted_extreme_value_runs_to_a_verdict(
            file in any::<prop::sample::Index>(),
            value in any::<prop::sample::Index>(),
            extreme in prop::sample::select(EXTREME_INTEGERS),
        ) {
            let texts = shipped_texts();
            let text = with_value(file.get::<String>(&texts), value, extreme);
            if let Ok((_, resolved)) = parse("v.toml", "v", &text) {
                let result = run(&resolved, 0);
                prop_assert!(
                    !matches!(result.outcome, Outcome::Crash { .. }),
                    "{text}\ncrashed: {:?}",
                    result.outcome
                );
            }
        }
    }
}

/// Of two mistakes in one table, the one earlier in the file is reported (the table is read in
/// the file's order, not its keys' alphabetical one).
#[test]
fn of_two_mistakes_the_earlier_one_is_reported() {
    let text = "[workload]\nrecipe = \"lock\"\nclients = \"x\"\nbogus = 1\n";
    let error = parse("two.toml", "two", text)
        .expect_err("refused")
        .to_string();
    assert!(
        error.starts_with("two.toml:3:11: workload.clients:"),
        "{error}"
    );
}

//! Scenario files: every file of the catalogue and of the regressions parses; a malformed file
//! gets one error naming the file, line, column and field, and what was expected; and nothing
//! panics on any input (mutated catalogue files, random bytes).

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use zkh_scenarios::scenario::{load, parse};

fn files(folder: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder);
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    found.sort();
    found
}

#[test]
fn every_catalogue_regression_and_finding_file_parses() {
    let mut count = 0;
    for folder in ["catalog", "regressions", "findings"] {
        for file in files(folder) {
            load(&file).unwrap_or_else(|error| panic!("{error}"));
            count += 1;
        }
    }
    assert!(count >= 60, "the catalogue holds {count} files");
}

/// `text`'s error, as `zkharness` prints it.
fn error(text: &str) -> String {
    parse("catalog/bad.toml", "bad", text)
        .expect_err("a bad file")
        .to_string()
}

#[test]
fn a_malformed_file_is_named_with_line_column_and_field() {
    let lock = "[workload]\nrecipe = \"lock\"\n";
    let cases = [
        (
            format!("{lock}\n[faults.random]\npause_ms = \"3s\"\n"),
            "catalog/bad.toml:5:12: faults.random.pause_ms: expected an integer number of milliseconds, found \"3s\"",
        ),
        (
            "[workload]\nrecipe = \"queue\"\n".to_owned(),
            // The registered list is the process's: other tests of this binary register
            // recipes of their own (sim_cli.rs checks the whole message, from zkharness).
            "catalog/bad.toml:2:10: workload.recipe: unknown recipe \"queue\" (built in: lock, latch, election, master, job; registered: ",
        ),
        (
            format!("{lock}colour = 3\n"),
            "catalog/bad.toml:3:1: workload.colour: unknown field `colour`",
        ),
        (
            format!("{lock}variant = \"sloppy\"\n"),
            "catalog/bad.toml:3:11: workload.variant: unknown variant \"sloppy\" (known: correct, herd, unprotected, unguaranteed-delete, curator-2.10.0, curator-5.3.0, curator-5.4.0, curator-5.7.1, curator-5.9.0)",
        ),
        (
            format!("{lock}\n[[faults.scripted]]\nat_ms = 100\nfault = {{ kind = \"crash-client\", client = 7 }}\n"),
            "catalog/bad.toml:6:43: faults.scripted[0].fault.client: expected a client from 0 to 2, found 7",
        ),
        (
            format!("{lock}\n[[faults.scripted]]\nat_ms = 100\nfault = {{ kind = \"melt\" }}\n"),
            "catalog/bad.toml:6:18: faults.scripted[0].fault.kind: unknown variant `melt`",
        ),
        (
            format!("{lock}\n[[faults.scripted]]\nat_ms = 25000\nfault = {{ kind = \"data-loss\" }}\n"),
            "catalog/bad.toml:5:9: faults.scripted[0].at_ms: expected a time within the fault phase (0 to 19999 ms), found 25000: it would never fire",
        ),
        (
            format!("{lock}\n[expect]\nviolation = \"no shard lost\"\n"),
            "catalog/bad.toml:5:13: expect.violation: the lock judges no property \"no shard lost\"",
        ),
        (
            "[workload\nrecipe = \"lock\"\n".to_owned(),
            "catalog/bad.toml:1:10: unclosed table",
        ),
        (
            "[workload]\nvariant = \"correct\"\n".to_owned(),
            "catalog/bad.toml:1:1: workload: missing field `recipe`",
        ),
        (
            format!("{lock}servers = 4\n"),
            "catalog/bad.toml:3:11: workload.servers: expected 1, 3 or 5 servers, found 4",
        ),
    ];
    for (text, expected) in cases {
        let got = error(&text);
        assert!(
            got.starts_with(expected),
            "for\n{text}\nexpected {expected}\ngot      {got}"
        );
    }
}

#[test]
fn a_missing_file_and_a_non_utf8_file_are_errors_not_panics() {
    let missing = load(Path::new("no/such/scenario.toml")).expect_err("missing");
    assert!(missing
        .to_string()
        .starts_with("no/such/scenario.toml:1:1: cannot read the file"));
    let dir = std::env::temp_dir().join(format!("zkh-bytes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let file = dir.join("latin1.toml");
    std::fs::write(&file, b"[workload]\nrecipe = \"lock\xe9\"\n").expect("write");
    let error = load(&file).expect_err("not UTF-8").to_string();
    assert!(
        error.ends_with(":2:15: the file is not UTF-8 text"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
}

fn catalogue_texts() -> Vec<String> {
    files("catalog")
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("a catalogue file"))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A catalogue file with bytes replaced, inserted or removed: parsed or refused, never a
    /// panic, and a refusal always names a line and column inside the text.
    #[test]
    fn mutated_catalogue_files_never_panic(
        pick in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<u8>()), 1..8),
    ) {
        let texts = catalogue_texts();
        let mut bytes = pick.get(&texts).clone().into_bytes();
        for (at, how, byte) in edits {
            let at = at.index(bytes.len().max(1)).min(bytes.len());
            match how {
                0 if at < bytes.len() => bytes[at] = byte,
                1 => bytes.insert(at, byte),
                _ if at < bytes.len() => { bytes.remove(at); }
                _ => {}
            }
        }
        if let Ok(text) = String::from_utf8(bytes) {
            if let Err(error) = parse("m.toml", "m", &text) {
                prop_assert!(error.line >= 1 && error.line <= text.lines().count().max(1) + 1, "{error}");
            }
        }
    }

    /// Random text: never a panic.
    #[test]
    fn random_text_never_panics(text in ".{0,400}") {
        let _ = parse("r.toml", "r", &text);
    }

    /// Random lines drawn from the catalogue's own lines, in any order: never a panic.
    #[test]
    fn shuffled_catalogue_lines_never_panic(lines in prop::collection::vec(any::<prop::sample::Index>(), 0..30)) {
        let all: Vec<String> = catalogue_texts().iter().flat_map(|t| t.lines().map(str::to_owned).collect::<Vec<_>>()).collect();
        let text: Vec<&str> = lines.iter().map(|i| i.get(&all).as_str()).collect();
        let _ = parse("s.toml", "s", &text.join("\n"));
    }
}

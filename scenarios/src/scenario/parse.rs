//! Reading a scenario file, and saying exactly where it is wrong.
//!
//! Deserialization goes through `serde_path_to_error`, which knows the dotted path of the field
//! being read when an error happens; TOML's own error knows the byte span. A problem found after
//! deserialization (an unknown variant, a client out of range) carries a path only, and is
//! located by walking TOML's spanned document to that path. Serde's "expected u64" becomes what a
//! knob's unit says it expects: names end in their unit (`_ms`, `_per_s`).

use std::fmt;
use std::ops::Range;
use std::path::Path;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::resolve::{resolve, Problem};
use super::{Resolved, ScenarioFile};

/// What is wrong with a scenario file, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file as the user named it.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// The dotted path of the field, when the problem is about one.
    pub field: Option<String>,
    /// What was expected, and what was found.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?;
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// A scenario file, read and checked.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The file's text.
    pub text: String,
    /// As written.
    pub file: ScenarioFile,
    /// Ready to run.
    pub resolved: Resolved,
    /// The variant given in place of the file's (`run --variant`), if one was.
    pub variant_given: Option<String>,
}

impl Loaded {
    /// The same scenario with `variant` in place of the one the file names (`run --variant`):
    /// an unknown variant is refused, with the recipe's known ones.
    pub fn with_variant(&self, variant: &str) -> Result<Loaded, String> {
        let mut file = self.file.clone();
        file.workload.variant = variant.to_owned();
        let resolved = resolve(&self.resolved.name, &file)
            .map_err(|(field, message)| format!("--variant: {message} ({field})"))?;
        Ok(Loaded {
            text: self.text.clone(),
            file,
            resolved,
            variant_given: Some(variant.to_owned()),
        })
    }
}

/// Reads the file at `path` as text: how to show it, its name (the stem), and the text.
pub(crate) fn read(path: &Path) -> Result<(String, String, String), ScenarioError> {
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|error| ScenarioError {
        file: shown.clone(),
        line: 1,
        column: 1,
        field: None,
        message: format!("cannot read the file: {error}"),
    })?;
    let text = String::from_utf8(bytes).map_err(|error| {
        let at = error.utf8_error().valid_up_to();
        let prefix = String::from_utf8_lossy(&error.as_bytes()[..at]).into_owned();
        let (line, column) = line_column(&prefix, prefix.len());
        ScenarioError {
            file: shown.clone(),
            line,
            column,
            field: None,
            message: "the file is not UTF-8 text".to_owned(),
        }
    })?;
    let name = path.file_stem().map_or_else(
        || "scenario".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    Ok((shown, name, text))
}

/// Reads and checks the scenario at `path`. Its name is the file's stem.
pub fn load(path: &Path) -> Result<Loaded, ScenarioError> {
    let (shown, name, text) = read(path)?;
    let (file, resolved) = parse(&shown, &name, &text)?;
    Ok(Loaded {
        text,
        file,
        resolved,
        variant_given: None,
    })
}

/// Reads `text` as a `T`, its errors located in `shown` (file, line, column, field); and, once
/// read, `check` on it, whose problem (a field's dotted path and a message) is located too.
pub(crate) fn deserialize_checked<T: serde::de::DeserializeOwned, R>(
    shown: &str,
    text: &str,
    check: impl FnOnce(&T) -> Result<R, Problem>,
) -> Result<(T, R), ScenarioError> {
    let error_at = |span: Option<Range<usize>>, field: Option<String>, message: String| {
        let (line, column) = span.map_or((1, 1), |span| line_column(text, span.start));
        ScenarioError {
            file: shown.to_owned(),
            line,
            column,
            field,
            message,
        }
    };
    let deserializer = toml::Deserializer::parse(text)
        .map_err(|error| error_at(error.span(), None, error.message().trim().to_owned()))?;
    let file: T = serde_path_to_error::deserialize(deserializer).map_err(|error| {
        let field = field_path(&error.path().to_string());
        let inner = error.inner();
        let span = inner.span().or_else(|| locate(text, field.as_deref()?));
        let message = explain(field.as_deref(), inner.message());
        error_at(span, field, message)
    })?;
    let checked = check(&file).map_err(|(field, message): Problem| {
        error_at(locate(text, &field), Some(field), message)
    })?;
    Ok((file, checked))
}

/// Parses and checks scenario `text`, named `name`; errors name `shown` as the file.
pub fn parse(
    shown: &str,
    name: &str,
    text: &str,
) -> Result<(ScenarioFile, Resolved), ScenarioError> {
    deserialize_checked(shown, text, |file: &ScenarioFile| resolve(name, file))
}

/// `serde_path_to_error`'s path (`?` when empty) as a field path, or none at the top.
fn field_path(path: &str) -> Option<String> {
    (path != "." && !path.is_empty() && path != "?").then(|| path.to_owned())
}

/// Serde's words, in a knob's terms: `invalid type: string "3s", expected u64` on a field
/// ending `_ms` becomes `expected an integer number of milliseconds, found "3s"`.
pub(crate) fn explain(field: Option<&str>, message: &str) -> String {
    let message = message.trim();
    // TOML's integers are 64-bit signed: a larger one is not a TOML integer at all, whatever
    // the knob's type could hold (the toml crate reads it as a u64 and says only that).
    if message.contains("u64 value was too large") || message.contains("too large to fit") {
        return format!(
            "expected a whole number of at most {} (TOML's integers are 64-bit signed), found \
             a larger one",
            i64::MAX
        );
    }
    let Some((found, expected)) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .and_then(|rest| rest.rsplit_once(", expected "))
    else {
        return message.to_owned();
    };
    let last = field
        .map(|f| f.rsplit('.').next().unwrap_or(f))
        .unwrap_or("");
    let expected = if last.ends_with("_ms") {
        "an integer number of milliseconds"
    } else if last.ends_with("_per_s") {
        "a number per second"
    } else {
        match expected {
            "u32" | "u64" | "usize" => "a whole number, 0 or more",
            "i64" => "a whole number",
            "f64" => "a number",
            "a boolean" => "true or false",
            other => other,
        }
    };
    let found = found.strip_prefix("string ").unwrap_or(found);
    format!("expected {expected}, found {found}")
}

/// 1-based line and column (in characters) of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    (line, before[line_start..].chars().count() + 1)
}

/// The span of the value at `path` (`faults.scripted[2].fault.client`), or of the deepest part
/// of it the file has (a field left to its default is not in the file).
fn locate(text: &str, path: &str) -> Option<Range<usize>> {
    let root = DeTable::parse(text).ok()?;
    let mut span = None;
    let mut table: Option<&DeTable<'_>> = Some(root.get_ref());
    let mut value: Option<&Spanned<DeValue<'_>>> = None;
    for segment in path.split('.') {
        let (key, indices) = match segment.find('[') {
            Some(at) => (&segment[..at], &segment[at..]),
            None => (segment, ""),
        };
        let current = match (table, value) {
            (Some(t), _) => t,
            (None, Some(v)) => match v.get_ref() {
                DeValue::Table(t) => t,
                _ => break,
            },
            (None, None) => break,
        };
        let Some((name, found)) = current.iter().find(|(k, _)| k.get_ref().as_ref() == key) else {
            break;
        };
        span = Some(name.span());
        let mut here = found;
        let mut complete = true;
        for index in indices
            .split(']')
            .filter_map(|i| i.strip_prefix('['))
            .filter_map(|i| i.parse::<usize>().ok())
        {
            match here.get_ref() {
                DeValue::Array(items) if index < items.len() => here = &items[index],
                _ => {
                    complete = false;
                    break;
                }
            }
        }
        span = Some(if complete {
            here.span()
        } else {
            span.expect("set above")
        });
        if !complete {
            break;
        }
        table = None;
        value = Some(here);
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_is_counted_in_lines_and_characters() {
        assert_eq!(line_column("ab\ncd", 0), (1, 1));
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_column("é\nx", 3), (2, 1));
        assert_eq!(line_column("é", 1), (1, 1), "inside a character: its start");
    }

    #[test]
    fn serde_words_become_the_knobs_units() {
        assert_eq!(
            explain(
                Some("faults.random.pause_ms"),
                "invalid type: string \"3s\", expected u64"
            ),
            "expected an integer number of milliseconds, found \"3s\""
        );
        assert_eq!(
            explain(
                Some("workload.clients"),
                "invalid value: integer `-1`, expected u32"
            ),
            "expected a whole number, 0 or more, found integer `-1`"
        );
        assert_eq!(
            explain(None, "missing field `workload`"),
            "missing field `workload`"
        );
    }

    #[test]
    fn a_path_is_found_in_tables_arrays_and_inline_tables() {
        let text = "[workload]\nrecipe = \"lock\"\n\n[[faults.scripted]]\nat_ms = 1\nfault = { kind = \"crash-client\", client = 9 }\n";
        let at = |path| locate(text, path).map(|span| line_column(text, span.start));
        assert_eq!(at("workload.recipe"), Some((2, 10)));
        assert_eq!(at("faults.scripted[0].fault.client"), Some((6, 43)));
        assert_eq!(at("faults.scripted[0].at_ms"), Some((5, 9)));
        assert_eq!(
            at("workload.servers"),
            Some((1, 1)),
            "a default: the table that would hold it"
        );
        assert_eq!(
            at("phases.fault_ms"),
            None,
            "nothing of it: the caller says line 1"
        );
    }
}

//! The recipe registry stands below the command line: nothing under `src/registry/` (nor the
//! layers it is made of and registered from: the model checker's commands, the scenario files,
//! the built-ins, a user's recipe API, the export) imports `crate::cli`. The command line looks
//! recipes up in the registry; it is never the other way round.

use std::path::{Path, PathBuf};

/// The modules below the command line.
const BELOW_THE_COMMAND_LINE: [&str; 7] = [
    "src/registry",
    "src/checker",
    "src/scenario",
    "src/builtins",
    "src/custom",
    "src/export.rs",
    "src/lib.rs",
];

fn rust_files(path: &Path, files: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .expect("a source folder")
            .map(|entry| entry.expect("an entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            rust_files(&entry, files);
        }
    } else if path.extension().is_some_and(|ext| ext == "rs") {
        files.push(path.to_owned());
    }
}

/// The lines of `text` that name the command line's module in code (comments and a macro's
/// expansion in the user's own binary, `$crate::cli::main()`, are not imports).
fn imports_of_cli(text: &str) -> Vec<String> {
    (text.lines())
        .map(str::trim)
        .filter(|line| !line.starts_with("//"))
        .filter(|line| !line.contains("$crate::cli::main()"))
        .filter(|line| line.contains("crate::cli") || line.contains("super::cli"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn nothing_below_the_command_line_imports_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for module in BELOW_THE_COMMAND_LINE {
        rust_files(&root.join(module), &mut files);
    }
    assert!(files.len() > 20, "the modules were found: {files:?}");
    let offending: Vec<String> = (files.iter())
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).expect("a source file");
            let shown = file
                .strip_prefix(root)
                .unwrap_or(file)
                .display()
                .to_string();
            imports_of_cli(&text)
                .into_iter()
                .map(move |line| format!("{shown}: {line}"))
        })
        .collect();
    assert!(
        offending.is_empty(),
        "imports of the command line: {offending:#?}"
    );
}

#[test]
fn the_check_sees_an_import() {
    assert_eq!(
        imports_of_cli("use crate::cli::machines::MachineEntry;\n// crate::cli in a comment\n"),
        vec!["use crate::cli::machines::MachineEntry;".to_owned()]
    );
}

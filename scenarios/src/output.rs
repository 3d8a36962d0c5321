//! Writing the commands' results to standard output (the `say!` macro).

use crate::report::exit;

/// The exit code of a program whose output pipe closed (128 + SIGPIPE's 13).
const BROKEN_PIPE: u8 = 141;

/// Writes `line` to stdout; a reader that went away ends the program with [`BROKEN_PIPE`].
pub(crate) fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(error) = writeln!(std::io::stdout().lock(), "{line}") {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(BROKEN_PIPE.into());
        }
        eprintln!("zkharness: cannot write to stdout: {error}");
        std::process::exit(exit::BAD_INPUT.into());
    }
}

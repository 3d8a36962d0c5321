//! ZooKeeper paths, validated by ZooKeeper's own rules.
//!
//! A path is absolute and `/`-separated. ZooKeeper (`PathUtils.validatePath`) rejects:
//!
//! - the empty string, and anything that does not start with `/`;
//! - a trailing `/` (except the root itself), and an empty segment (`//`);
//! - a `.` or `..` segment (there are no relative paths);
//! - the NUL character, the control characters U+0001..U+001F and U+007F..U+009F, and the code
//!   points U+D800..U+F8FF and U+FFF0..U+FFFF.
//!
//! A *sequential* create is validated as if a digit followed the path, because the server
//! appends the counter: `/jobs/` is a valid sequential prefix and yields `/jobs/0000000003`.
//!
//! Every rejection is [`ZkError::BadArguments`], the code both the server and the client
//! libraries give, with a reason that says which rule was broken.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::ZkError;

/// Why a path was rejected. Carried for diagnostics; the wire-level code is always
/// [`ZkError::BadArguments`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathProblem {
    /// The path is the empty string.
    Empty,
    /// The path does not start with `/`.
    NotAbsolute,
    /// The path ends with `/` and is not the root.
    TrailingSlash,
    /// Two `/` follow each other.
    EmptySegment,
    /// A segment is `.` or `..`.
    RelativeSegment,
    /// A character ZooKeeper forbids (NUL, control, surrogate or private-use ranges).
    ForbiddenCharacter,
    /// The operation may not target the root (`create /`, `delete /`).
    Root,
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathProblem::Empty => "path is empty",
            PathProblem::NotAbsolute => "path must start with '/'",
            PathProblem::TrailingSlash => "path must not end with '/'",
            PathProblem::EmptySegment => "path has an empty segment ('//')",
            PathProblem::RelativeSegment => "path has a '.' or '..' segment",
            PathProblem::ForbiddenCharacter => "path has a character ZooKeeper forbids",
            PathProblem::Root => "the root node cannot be created or deleted",
        })
    }
}

fn forbidden(c: char) -> bool {
    matches!(u32::from(c), 0x0000..=0x001f | 0x007f..=0x009f | 0xd800..=0xf8ff | 0xfff0..=0xffff)
}

/// Checks `path` against ZooKeeper's rules. With `sequential`, the path is checked as the
/// server will make it, with a digit appended, so a trailing `/` is allowed.
pub fn check_path(path: &str, sequential: bool) -> Result<(), PathProblem> {
    if path.is_empty() {
        return Err(PathProblem::Empty);
    }
    if !path.starts_with('/') {
        return Err(PathProblem::NotAbsolute);
    }
    let forbidden_character = if path.is_ascii() {
        path.bytes().any(|b| b < 0x20 || b == 0x7f)
    } else {
        path.chars().any(forbidden)
    };
    if forbidden_character {
        return Err(PathProblem::ForbiddenCharacter);
    }
    let bytes = path.as_bytes();
    let mut start = 1;
    loop {
        let end = bytes[start..]
            .iter()
            .position(|b| *b == b'/')
            .map_or(bytes.len(), |length| start + length);
        let last = end == bytes.len();
        if last && (sequential || path == "/") {
            // The server appends the sequence number to the last segment, so any is valid
            // (`/a/` becomes `/a/0000000001`, `/a/.` becomes `/a/.0000000001`); and the root
            // is the one path whose only segment is empty.
            return Ok(());
        }
        match &bytes[start..end] {
            b"" if last => return Err(PathProblem::TrailingSlash),
            b"" => return Err(PathProblem::EmptySegment),
            b"." | b".." => return Err(PathProblem::RelativeSegment),
            _ if last => return Ok(()),
            _ => start = end + 1,
        }
    }
}

/// Validates a path for a read, a delete, a set or a check: [`ZkError::BadArguments`] if invalid.
pub fn validate_path(path: &str) -> Result<(), ZkError> {
    check_path(path, false).map_err(|_| ZkError::BadArguments)
}

/// Validates a path for a create of the given sequential-ness. The root cannot be created.
pub fn validate_create_path(path: &str, sequential: bool) -> Result<(), ZkError> {
    check_path(path, sequential).map_err(|_| ZkError::BadArguments)?;
    if path == "/" {
        return Err(ZkError::BadArguments);
    }
    Ok(())
}

/// Validates a path for a delete. The root cannot be deleted.
pub fn validate_delete_path(path: &str) -> Result<(), ZkError> {
    validate_path(path)?;
    if path == "/" {
        return Err(ZkError::BadArguments);
    }
    Ok(())
}

/// The parent of a valid, non-root path: `/a/b` gives `/a`, `/a` gives `/`.
///
/// # Panics
/// On the root, which has no parent: callers validate first.
pub fn parent_of(path: &str) -> &str {
    assert!(
        path != "/" && path.starts_with('/'),
        "parent_of needs a non-root absolute path, got {path:?}"
    );
    match path.rfind('/') {
        Some(0) => "/",
        Some(index) => &path[..index],
        None => unreachable!("an absolute path contains '/'"),
    }
}

/// The last segment of a valid, non-root path: `/a/b` gives `b`.
pub fn name_of(path: &str) -> &str {
    &path[path.rfind('/').map_or(0, |i| i + 1)..]
}

/// `path` and its ancestors below the root, shallowest first: `/a/b/c` gives `/a`, `/a/b`,
/// `/a/b/c`. What a recipe creates when it makes a node's parents "if needed".
pub fn ancestors(path: &str) -> Vec<String> {
    let mut paths = vec![path.to_owned()];
    let mut current = path;
    while parent_of(current) != "/" {
        current = parent_of(current);
        paths.push(current.to_owned());
    }
    paths.reverse();
    paths
}

/// Whether `path` is `dir` or lies under it (`/a/b` is under `/a`; `/ab` is not).
pub fn is_under(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// `parent` joined with one child `name`.
pub fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// A path that passed [`validate_path`]. Recipes hold their configured paths in this type so
/// that a bad path is reported once, when the recipe is built, not on every operation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ZkPath(String);

impl ZkPath {
    /// Validates `path`.
    pub fn new(path: impl Into<String>) -> Result<Self, PathError> {
        let path = path.into();
        match check_path(&path, false) {
            Ok(()) => Ok(ZkPath(path)),
            Err(problem) => Err(PathError { path, problem }),
        }
    }

    /// The root, `/`.
    pub fn root() -> Self {
        ZkPath("/".to_owned())
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path of the child `name`, validated.
    pub fn child(&self, name: &str) -> Result<Self, PathError> {
        ZkPath::new(join(&self.0, name))
    }

    /// The parent, or `None` for the root.
    pub fn parent(&self) -> Option<Self> {
        (self.0 != "/").then(|| ZkPath(parent_of(&self.0).to_owned()))
    }
}

impl fmt::Display for ZkPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ZkPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ZkPath {
    type Error = PathError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        ZkPath::new(value)
    }
}

impl From<ZkPath> for String {
    fn from(value: ZkPath) -> Self {
        value.0
    }
}

/// A rejected path, with the rule it broke.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid ZooKeeper path {path:?}: {problem}")]
pub struct PathError {
    /// The path as given.
    pub path: String,
    /// The rule it broke.
    pub problem: PathProblem,
}

impl From<PathError> for ZkError {
    fn from(_: PathError) -> Self {
        ZkError::BadArguments
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_means_the_dir_or_below_it() {
        assert!(is_under("/a", "/a"));
        assert!(is_under("/a/b/c", "/a"));
        assert!(!is_under("/ab", "/a"));
        assert!(!is_under("/b", "/a"));
    }

    #[test]
    fn accepts_what_zookeeper_accepts() {
        for ok in [
            "/",
            "/a",
            "/a/b",
            "/a.b",
            "/...",
            "/a/.x",
            "/_c_1-lock-",
            "/zk-é",
        ] {
            assert_eq!(check_path(ok, false), Ok(()), "{ok}");
        }
        assert_eq!(check_path("/jobs/", true), Ok(()));
        assert_eq!(
            check_path("/a/.", true),
            Ok(()),
            "validated as /a/.1, like the server"
        );
    }

    #[test]
    fn rejects_what_zookeeper_rejects() {
        let cases = [
            ("", PathProblem::Empty),
            ("a", PathProblem::NotAbsolute),
            ("/a/", PathProblem::TrailingSlash),
            ("//a", PathProblem::EmptySegment),
            ("/a//b", PathProblem::EmptySegment),
            ("/a/.", PathProblem::RelativeSegment),
            ("/a/../b", PathProblem::RelativeSegment),
            ("/a\u{0}", PathProblem::ForbiddenCharacter),
            ("/a\u{1f}", PathProblem::ForbiddenCharacter),
            ("/a\u{85}", PathProblem::ForbiddenCharacter),
            ("/a\u{e000}", PathProblem::ForbiddenCharacter),
            ("/a\u{fff5}", PathProblem::ForbiddenCharacter),
            // The first problem is the one reported, and a forbidden character comes first.
            ("/.//a", PathProblem::RelativeSegment),
            ("//./a", PathProblem::EmptySegment),
            ("/a/./b\u{1}", PathProblem::ForbiddenCharacter),
            ("//\u{e000}", PathProblem::ForbiddenCharacter),
        ];
        for (path, problem) in cases {
            assert_eq!(check_path(path, false), Err(problem), "{path:?}");
        }
        assert_eq!(check_path("/a//", true), Err(PathProblem::EmptySegment));
        assert_eq!(validate_create_path("/", false), Err(ZkError::BadArguments));
        assert_eq!(validate_delete_path("/"), Err(ZkError::BadArguments));
    }

    /// ZooKeeper's rules for a path, as plainly as they can be written: the oracle for
    /// [`check_path`], which is written for speed.
    fn plainly_checked(path: &str) -> Result<(), PathProblem> {
        let segments: Vec<&str> = match path.strip_prefix('/') {
            _ if path.is_empty() => return Err(PathProblem::Empty),
            None => return Err(PathProblem::NotAbsolute),
            Some(_) if path.chars().any(forbidden) => return Err(PathProblem::ForbiddenCharacter),
            Some("") => return Ok(()),
            Some(rest) => rest.split('/').collect(),
        };
        let last = segments.len() - 1;
        for (index, segment) in segments.into_iter().enumerate() {
            match segment {
                "" if index == last => return Err(PathProblem::TrailingSlash),
                "" => return Err(PathProblem::EmptySegment),
                "." | ".." => return Err(PathProblem::RelativeSegment),
                _ => {}
            }
        }
        Ok(())
    }

    /// Paths made of segments that break each rule (a first segment other than "" makes a
    /// relative path).
    fn paths() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        const SEGMENTS: [&str; 8] = ["", ".", "..", "a", ".a", "a\u{0}", "é", "\u{85}"];
        proptest::collection::vec(proptest::sample::select(&SEGMENTS[..]), 0..5)
            .prop_map(|segments| segments.join("/"))
    }

    proptest::proptest! {
        #[test]
        fn a_path_is_checked_by_zookeepers_rules(path in paths()) {
            proptest::prop_assert_eq!(check_path(&path, false), plainly_checked(&path));
        }

        /// A sequential create is checked as the path the server makes of it: the same path
        /// with a sequence number appended.
        #[test]
        fn a_sequential_path_is_checked_as_the_server_names_it(path in paths()) {
            proptest::prop_assume!(!path.is_empty());
            proptest::prop_assert_eq!(
                check_path(&path, true),
                check_path(&format!("{path}0000000001"), false),
            );
        }
    }

    #[test]
    fn parents_and_names() {
        assert_eq!(parent_of("/a"), "/");
        assert_eq!(parent_of("/a/b/c"), "/a/b");
        assert_eq!(name_of("/a/b"), "b");
        assert_eq!(join("/", "a"), "/a");
        assert_eq!(ancestors("/a/b/c"), ["/a", "/a/b", "/a/b/c"]);
        assert_eq!(ancestors("/a"), ["/a"]);
        assert_eq!(
            ZkPath::new("/a/b").unwrap().parent(),
            Some(ZkPath::new("/a").unwrap())
        );
        assert_eq!(ZkPath::root().parent(), None);
        let err = ZkPath::new("/a/").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid ZooKeeper path \"/a/\": path must not end with '/'"
        );
    }
}

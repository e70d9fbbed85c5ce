//! Parses the Codex `apply_patch` envelope into hunks (no filesystem access).
//!
//! The envelope is strict (exact `*** Begin Patch` / `*** End Patch` lines, no carriage return anywhere), while
//! the inside follows the leniencies models trained on Codex rely on: hunk headers may carry surrounding
//! whitespace, the first chunk of an Update may omit `@@`, an empty line inside an Update is an empty context
//! line, blank lines between chunks are skipped and trailing whitespace after a path is dropped.

use super::error::{PatchCode, PatchError};

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const EOF_MARKER: &str = "*** End of File";

/// A parsed patch: the file operations in the order the model wrote them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch<'a> {
    pub hunks: Vec<Hunk<'a>>,
}

/// One file operation of a patch; paths are raw (as written, trailing whitespace dropped), validated later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hunk<'a> {
    /// `*** Add File:` with the new file's lines (without the leading `+`).
    Add { path: &'a str, lines: Vec<&'a str> },
    /// `*** Delete File:`.
    Delete { path: &'a str },
    /// `*** Update File:` with an optional `*** Move to:` and at least one chunk (none for a pure Move).
    Update {
        path: &'a str,
        move_to: Option<&'a str>,
        chunks: Vec<Chunk<'a>>,
    },
}

/// One change block of an Update: an optional `@@` locator, its lines, and whether it is pinned to the end of file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// The text after `@@ ` (None for a bare `@@` or an omitted header).
    pub locator: Option<&'a str>,
    pub lines: Vec<ChunkLine<'a>>,
    /// `*** End of File` followed the chunk: only the end of the file is tried.
    pub end_of_file: bool,
}

/// A line of a chunk: context (` `, or an empty line), added (`+`) or removed (`-`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkLine<'a> {
    Context(&'a str),
    Add(&'a str),
    Remove(&'a str),
}

impl<'a> ChunkLine<'a> {
    /// The line as it must appear in the file before the change (None for an added line).
    pub fn old_side(&self) -> Option<&'a str> {
        match *self {
            ChunkLine::Context(s) | ChunkLine::Remove(s) => Some(s),
            ChunkLine::Add(_) => None,
        }
    }
    /// The line as it appears after the change (None for a removed line).
    pub fn new_side(&self) -> Option<&'a str> {
        match *self {
            ChunkLine::Context(s) | ChunkLine::Add(s) => Some(s),
            ChunkLine::Remove(_) => None,
        }
    }
}

impl<'a> Hunk<'a> {
    /// Every raw path this operation touches (a Move touches its source and its destination).
    pub fn raw_paths(&self) -> Vec<&'a str> {
        match self {
            Hunk::Add { path, .. } | Hunk::Delete { path } => vec![*path],
            Hunk::Update { path, move_to, .. } => {
                let mut v = vec![*path];
                if let Some(m) = move_to {
                    v.push(*m);
                }
                v
            }
        }
    }
}

/// Shortens a patch line for an error message (whole characters, at most 200).
pub(crate) fn clip(line: &str) -> String {
    const MAX: usize = 200;
    let mut out: String = line.chars().take(MAX).collect();
    if line.chars().nth(MAX).is_some() {
        out.push('…');
    }
    out
}

fn invalid_patch(msg: impl Into<String>) -> PatchError {
    PatchError::no_change(PatchCode::InvalidPatch, format!("invalid patch: {}", msg.into()))
}

fn invalid_hunk(line_number: usize, msg: impl Into<String>) -> PatchError {
    PatchError::no_change(
        PatchCode::InvalidHunk,
        format!("invalid hunk at line {line_number}, {}", msg.into()),
    )
}

/// Which header a (trimmed) line is, with its raw path; `*** Add File:` with nothing after it yields an empty path
/// so the path rules report it clearly.
fn header_path<'a>(trimmed: &'a str, marker: &str) -> Option<&'a str> {
    if let Some(p) = trimmed.strip_prefix(marker) {
        return Some(p.trim_end());
    }
    if trimmed == marker.trim_end() {
        return Some("");
    }
    None
}

fn is_hunk_header(line: &str) -> bool {
    let t = line.trim();
    header_path(t, ADD).is_some() || header_path(t, DELETE).is_some() || header_path(t, UPDATE).is_some()
}

/// Parses a whole patch. Errors carry the exact texts of the contract (code `invalid-patch` or `invalid-hunk`).
pub fn parse(patch: &str) -> Result<Patch<'_>, PatchError> {
    if patch.contains('\r') {
        return Err(invalid_patch(
            "the patch contains a carriage return (\\r); send it with LF line endings only",
        ));
    }
    let body = patch.strip_suffix('\n').unwrap_or(patch);
    let lines: Vec<&str> = body.split('\n').collect();
    if lines[0] != BEGIN {
        return Err(invalid_patch("The first line of the patch must be '*** Begin Patch'"));
    }
    if lines.len() < 2 || lines[lines.len() - 1] != END {
        return Err(invalid_patch("The last line of the patch must be '*** End Patch'"));
    }
    let inner = &lines[1..lines.len() - 1];
    if inner.is_empty() {
        return Err(invalid_patch(
            "the patch contains no file operations; add an '*** Add File: ', '*** Delete File: ' or '*** Update File: ' section",
        ));
    }
    let mut hunks = Vec::new();
    let mut i = 0;
    while i < inner.len() {
        // Line numbers are 1-based in the whole patch: inner[0] is line 2.
        let (hunk, used) = parse_hunk(&inner[i..], i + 2)?;
        hunks.push(hunk);
        i += used;
    }
    Ok(Patch { hunks })
}

fn parse_hunk<'a>(lines: &[&'a str], line_number: usize) -> Result<(Hunk<'a>, usize), PatchError> {
    let first = lines[0].trim();
    if let Some(path) = header_path(first, ADD) {
        let mut body = Vec::new();
        let mut used = 1;
        while used < lines.len() {
            match lines[used].strip_prefix('+') {
                Some(rest) => body.push(rest),
                None => break,
            }
            used += 1;
        }
        if body.is_empty() {
            return Err(invalid_hunk(
                line_number,
                format!(
                    "Add File '{}' has no '+' lines; every line of a new file starts with '+'",
                    clip(path)
                ),
            ));
        }
        if used < lines.len() && !is_hunk_header(lines[used]) {
            return Err(invalid_hunk(
                line_number + used,
                format!(
                    "unexpected line in Add File '{}': '{}'. Every line of a new file starts with '+' (a lone '+' is an empty line)",
                    clip(path),
                    clip(lines[used])
                ),
            ));
        }
        return Ok((Hunk::Add { path, lines: body }, used));
    }
    if let Some(path) = header_path(first, DELETE) {
        return Ok((Hunk::Delete { path }, 1));
    }
    if let Some(path) = header_path(first, UPDATE) {
        let mut rest = &lines[1..];
        let mut used = 1;
        let mut move_to = None;
        if let Some(first_rest) = rest.first() {
            if let Some(m) = header_path(first_rest.trim(), MOVE) {
                move_to = Some(m);
                rest = &rest[1..];
                used += 1;
            }
        }
        let mut chunks = Vec::new();
        while !rest.is_empty() {
            if rest[0].trim().is_empty() {
                rest = &rest[1..];
                used += 1;
                continue;
            }
            if rest[0].starts_with('*') {
                break;
            }
            let (chunk, n) = parse_chunk(rest, line_number + used, chunks.is_empty())?;
            chunks.push(chunk);
            rest = &rest[n..];
            used += n;
        }
        // A pure Move (no chunks) is a rename; an Update without a Move needs at least one chunk.
        if chunks.is_empty() && move_to.is_none() {
            return Err(invalid_hunk(
                line_number,
                format!("Update file hunk for path '{}' is empty", clip(path)),
            ));
        }
        return Ok((Hunk::Update { path, move_to, chunks }, used));
    }
    Err(invalid_hunk(
        line_number,
        format!(
            "'{}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', '*** Delete File: {{path}}', '*** Update File: {{path}}'",
            clip(first)
        ),
    ))
}

fn parse_chunk<'a>(
    lines: &[&'a str],
    line_number: usize,
    allow_missing_header: bool,
) -> Result<(Chunk<'a>, usize), PatchError> {
    let (locator, start) = if lines[0] == "@@" {
        (None, 1)
    } else if let Some(loc) = lines[0].strip_prefix("@@ ") {
        (if loc.trim().is_empty() { None } else { Some(loc) }, 1)
    } else if allow_missing_header {
        (None, 0)
    } else {
        return Err(invalid_hunk(
            line_number,
            format!(
                "Expected update hunk to start with a @@ context marker, got: '{}'",
                clip(lines[0])
            ),
        ));
    };
    if start >= lines.len() {
        return Err(invalid_hunk(line_number + 1, "Update hunk does not contain any lines"));
    }
    let mut chunk = Chunk {
        locator,
        lines: Vec::new(),
        end_of_file: false,
    };
    let mut parsed = 0;
    for line in &lines[start..] {
        if line.trim_end() == EOF_MARKER {
            if parsed == 0 {
                return Err(invalid_hunk(
                    line_number + start,
                    "Update hunk does not contain any lines",
                ));
            }
            chunk.end_of_file = true;
            parsed += 1;
            break;
        }
        match line.as_bytes().first() {
            None => chunk.lines.push(ChunkLine::Context("")),
            Some(b' ') => chunk.lines.push(ChunkLine::Context(&line[1..])),
            Some(b'+') => chunk.lines.push(ChunkLine::Add(&line[1..])),
            Some(b'-') => chunk.lines.push(ChunkLine::Remove(&line[1..])),
            Some(_) => {
                if parsed == 0 {
                    return Err(invalid_hunk(
                        line_number + start,
                        format!(
                            "Unexpected line found in update hunk: '{}'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)",
                            clip(line)
                        ),
                    ));
                }
                break;
            }
        }
        parsed += 1;
    }
    Ok((chunk, start + parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(p: &str) -> String {
        parse(p).unwrap_err().to_string()
    }

    #[test]
    fn minimal_add() {
        let p = parse("*** Begin Patch\n*** Add File: notes/todo.md\n+first line\n*** End Patch\n").unwrap();
        assert_eq!(
            p.hunks,
            vec![Hunk::Add {
                path: "notes/todo.md",
                lines: vec!["first line"]
            }]
        );
        // no trailing newline is fine too
        assert!(parse("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch").is_ok());
    }

    #[test]
    fn envelope_is_strict() {
        assert_eq!(
            err("bad"),
            "apply_patch failed (no-change): invalid patch: The first line of the patch must be '*** Begin Patch'"
        );
        assert_eq!(
            err(" *** Begin Patch\n*** Add File: a\n+x\n*** End Patch"),
            "apply_patch failed (no-change): invalid patch: The first line of the patch must be '*** Begin Patch'"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch \n"),
            "apply_patch failed (no-change): invalid patch: The last line of the patch must be '*** End Patch'"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n\n"),
            "apply_patch failed (no-change): invalid patch: The last line of the patch must be '*** End Patch'"
        );
        assert_eq!(
            err("*** Begin Patch"),
            "apply_patch failed (no-change): invalid patch: The last line of the patch must be '*** End Patch'"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Add File: a\n+x\r\n*** End Patch\n"),
            "apply_patch failed (no-change): invalid patch: the patch contains a carriage return (\\r); send it with LF line endings only"
        );
        assert_eq!(
            err("*** Begin Patch\n*** End Patch\n"),
            "apply_patch failed (no-change): invalid patch: the patch contains no file operations; add an '*** Add File: ', '*** Delete File: ' or '*** Update File: ' section"
        );
        assert_eq!(parse("").unwrap_err().code, "invalid-patch");
    }

    #[test]
    fn hunk_errors() {
        assert_eq!(
            err("*** Begin Patch\n*** Frobnicate File: a\n*** End Patch"),
            "apply_patch failed (no-change): invalid hunk at line 2, '*** Frobnicate File: a' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Add File: a\n*** End Patch"),
            "apply_patch failed (no-change): invalid hunk at line 2, Add File 'a' has no '+' lines; every line of a new file starts with '+'"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Add File: a\n+x\nbare\n*** End Patch"),
            "apply_patch failed (no-change): invalid hunk at line 4, unexpected line in Add File 'a': 'bare'. Every line of a new file starts with '+' (a lone '+' is an empty line)"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Add File: a\n+x\n\n*** End Patch"),
            "apply_patch failed (no-change): invalid hunk at line 4, unexpected line in Add File 'a': ''. Every line of a new file starts with '+' (a lone '+' is an empty line)"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Update File: a\n*** End Patch"),
            "apply_patch failed (no-change): invalid hunk at line 2, Update file hunk for path 'a' is empty"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Update File: a\n@@\n-x\nfoo\n*** End Patch"),
            "apply_patch failed (no-change): invalid hunk at line 5, Expected update hunk to start with a @@ context marker, got: 'foo'"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch"),
            "apply_patch failed (no-change): invalid hunk at line 4, Update hunk does not contain any lines"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Update File: a\n@@ ctx\n*** End Patch"),
            "apply_patch failed (no-change): invalid hunk at line 4, Update hunk does not contain any lines"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Update File: a\n@@\n@@\n-x\n*** End Patch"),
            "apply_patch failed (no-change): invalid hunk at line 4, Unexpected line found in update hunk: '@@'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"
        );
        assert_eq!(
            parse("*** Begin Patch\n*** Nope\n*** End Patch").unwrap_err().code,
            "invalid-hunk"
        );
    }

    #[test]
    fn leniencies() {
        let p = parse(
            "*** Begin Patch\n  *** Update File: src/a.rs  \n *** Move to: src/b.rs \n import foo\n-old\n+new\n\n keep\n@@ fn x\n-a\n+b\n*** End of File\n\n@@\n+tail\n*** Add File: n.txt \n+\n+two\n *** Delete File: gone.txt\t\n*** End Patch\n",
        )
        .unwrap();
        assert_eq!(
            p.hunks,
            vec![
                Hunk::Update {
                    path: "src/a.rs",
                    move_to: Some("src/b.rs"),
                    chunks: vec![
                        Chunk {
                            locator: None,
                            lines: vec![
                                ChunkLine::Context("import foo"),
                                ChunkLine::Remove("old"),
                                ChunkLine::Add("new"),
                                ChunkLine::Context(""),
                                ChunkLine::Context("keep"),
                            ],
                            end_of_file: false
                        },
                        Chunk {
                            locator: Some("fn x"),
                            lines: vec![ChunkLine::Remove("a"), ChunkLine::Add("b")],
                            end_of_file: true
                        },
                        Chunk {
                            locator: None,
                            lines: vec![ChunkLine::Add("tail")],
                            end_of_file: false
                        },
                    ]
                },
                Hunk::Add {
                    path: "n.txt",
                    lines: vec!["", "two"]
                },
                Hunk::Delete { path: "gone.txt" },
            ]
        );
    }

    #[test]
    fn padded_header_inside_an_update_is_a_context_line_as_in_codex() {
        let p = parse("*** Begin Patch\n*** Update File: a\n-x\n *** Delete File: b\n*** End Patch").unwrap();
        let Hunk::Update { chunks, .. } = &p.hunks[0] else {
            panic!()
        };
        assert_eq!(
            chunks[0].lines,
            vec![ChunkLine::Remove("x"), ChunkLine::Context("*** Delete File: b")]
        );
    }

    #[test]
    fn empty_header_paths_are_kept_for_the_path_rules() {
        let p = parse("*** Begin Patch\n*** Delete File:\n*** End Patch").unwrap();
        assert_eq!(p.hunks, vec![Hunk::Delete { path: "" }]);
    }

    #[test]
    fn first_chunk_may_omit_header_but_not_later_ones() {
        let p = parse("*** Begin Patch\n*** Update File: a\n-x\n+y\n*** End Patch").unwrap();
        match &p.hunks[0] {
            Hunk::Update { chunks, .. } => assert_eq!(chunks.len(), 1),
            _ => panic!(),
        }
    }
}

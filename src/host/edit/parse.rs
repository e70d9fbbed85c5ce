//! The Edit operation language (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit", docs/host.md
//! "Edit"). One header per operation, line numbers of the tagged snapshot, ranges inclusive:
//!
//! ```text
//! [path#TAG]          optional; must agree with the call's path and tag
//! PUT N.=M:           replace lines N..M with the + rows that follow
//! PUT <N:  PUT >N:    insert the + rows before / after line N
//! PUT >$:             append the + rows at the end
//! CUT N.=M [@reg]     delete lines N..M, capturing them (anonymous register without @name)
//! PUT <N @reg  PUT >N @reg  PUT >$ @reg  PUT N.=M @reg    paste a register (bare @ = the anonymous one)
//! REM                 delete the file (alone)
//! MV DEST             move the file after the other operations
//! ```
//!
//! Body rows are `+text`: the first `+` is dropped, so a bare `+` is an empty line and `++x` / `+-x` write `+x` /
//! `-x`. No `-old` rows, no context rows; colonless headers take no body. Blank lines between operations are ignored.

use super::limits::{MAX_OPS, MAX_OPS_BYTES};
use crate::host::error::{
    HostError, EDIT_AMPLIFICATION_LIMIT, EDIT_BLOCK_UNRESOLVED, EDIT_PARSE_FAILED, EDIT_RANGE_INVALID,
};
use crate::host::tag;

/// Where an insertion goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pos {
    /// `<N`: before line N.
    Before(u32),
    /// `>N`: after line N.
    After(u32),
    /// `>$`: after the last line.
    End,
}

/// A register reference: the call's anonymous one (`@` or a CUT without a name) or a named one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Reg {
    Anon,
    Named(String),
}

impl Reg {
    pub fn show(&self) -> String {
        match self {
            Reg::Anon => "the anonymous register (@)".to_string(),
            Reg::Named(n) => format!("register @{n}"),
        }
    }
}

/// What an insertion or replacement puts in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Src {
    Body(Vec<String>),
    Paste(Reg),
}

/// One operation, with the 1-based line of the ops text it starts on (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Replace { from: u32, to: u32, src: Src },
    Insert { at: Pos, src: Src },
    Cut { from: u32, to: u32, reg: Reg },
}

/// A parsed `ops` text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// `(path, tag)` of a leading `[path#TAG]` header.
    pub header: Option<(String, String)>,
    /// Line operations with their ops-text line numbers.
    pub ops: Vec<(usize, Op)>,
    pub rem: bool,
    pub mv: Option<String>,
}

fn fail(at: usize, msg: impl AsRef<str>) -> HostError {
    HostError::new(EDIT_PARSE_FAILED, format!("ops line {at}: {}", msg.as_ref()))
}

fn num(at: usize, s: &str) -> Result<u32, HostError> {
    match s.parse::<u32>() {
        Ok(n) if n >= 1 && s.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(fail(
            at,
            format!("'{s}' is not a line number; use a whole number from 1 as shown in the N: rows of Read."),
        )),
    }
}

/// A locator: `N.=M` (range), `<N`, `>N`, `>$`; a trailing `*` is a block locator.
enum Loc {
    Range(u32, u32),
    At(Pos),
}

fn locator(at: usize, s: &str) -> Result<Loc, HostError> {
    if let Some(base) = s.strip_suffix('*') {
        let plain = base.trim_start_matches(['<', '>']);
        return Err(HostError::new(
            EDIT_BLOCK_UNRESOLVED,
            format!(
                "ops line {at}: block locators ('{s}') are not resolved yet. Name the block's lines as a plain range \
                 instead, e.g. `PUT {plain}.=M:` or `CUT {plain}.=M` with M its last line from Read."
            ),
        ));
    }
    if s == ">$" {
        return Ok(Loc::At(Pos::End));
    }
    if let Some(n) = s.strip_prefix('<') {
        return Ok(Loc::At(Pos::Before(num(at, n)?)));
    }
    if let Some(n) = s.strip_prefix('>') {
        return Ok(Loc::At(Pos::After(num(at, n)?)));
    }
    if let Some((a, b)) = s.split_once(".=") {
        let (a, b) = (num(at, a)?, num(at, b)?);
        if a > b {
            return Err(HostError::new(
                EDIT_RANGE_INVALID,
                format!("ops line {at}: range {a}.={b} is reversed; write the first line first (`{b}.={a}`)."),
            ));
        }
        return Ok(Loc::Range(a, b));
    }
    if s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty() {
        return Err(fail(
            at,
            format!("'{s}' needs a range form; a single line is `{s}.={s}`."),
        ));
    }
    Err(fail(
        at,
        format!("'{s}' is not a locator; use `N.=M`, `<N`, `>N` or `>$`."),
    ))
}

fn register(at: usize, s: &str) -> Result<Reg, HostError> {
    let name = s
        .strip_prefix('@')
        .ok_or_else(|| fail(at, format!("'{s}' is not a register; write @name or @.")))?;
    if name.is_empty() {
        return Ok(Reg::Anon);
    }
    if name.len() > 64
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(fail(
            at,
            format!("register name '{name}' must be 1 to 64 letters, digits, '_' or '-'."),
        ));
    }
    Ok(Reg::Named(name.to_string()))
}

/// Parses an `ops` text. Enforces the size limits of the text and the op count.
pub fn parse(ops: &str) -> Result<Parsed, HostError> {
    if ops.len() > MAX_OPS_BYTES {
        return Err(HostError::new(
            EDIT_AMPLIFICATION_LIMIT,
            format!(
                "ops is {} bytes, over the {MAX_OPS_BYTES}-byte limit per call. Split the change into several Edit \
                 calls (each with the tag the previous one returned), or use Write for a whole-file rewrite.",
                ops.len()
            ),
        ));
    }
    let mut p = Parsed::default();
    // The body under construction: (index into p.ops, accepts rows).
    let mut body_open: Option<usize> = None;
    let mut headers = 0usize;
    let mut first = true;
    for (i, raw) in ops.split('\n').enumerate() {
        let at = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(row) = line.strip_prefix('+') {
            if row.contains('\r') {
                return Err(HostError::new(
                    crate::host::error::EDIT_BARE_CR,
                    format!(
                        "ops line {at}: this + row holds a carriage return (\\r) inside its text. Rows take the file's \
                         own line ending, so a CR inside a row would land as a stray line break; nothing was written. \
                         Remove the \\r, or split the text into separate + rows."
                    ),
                ));
            }
            let Some(k) = body_open else {
                return Err(fail(
                    at,
                    "a + row must follow a header that ends in ':' (PUT N.=M:, PUT <N:, PUT >N:, PUT >$:).",
                ));
            };
            match &mut p.ops[k].1 {
                Op::Replace { src: Src::Body(b), .. } | Op::Insert { src: Src::Body(b), .. } => b.push(row.to_string()),
                _ => unreachable!("body_open only points at body ops"),
            }
            continue;
        }
        body_open = None;
        if line.trim().is_empty() {
            continue;
        }
        if first {
            first = false;
            if let Some((path, tag)) = crate::host::write::is_header(line) {
                p.header = Some((path.to_string(), tag.to_ascii_uppercase()));
                continue;
            }
        }
        if line.starts_with('-') {
            return Err(fail(
                at,
                "'-' rows are not accepted: Edit never matches old text. Name the lines instead: `CUT N.=M` deletes \
                 them, `PUT N.=M:` + rows replaces them.",
            ));
        }
        if line.starts_with([' ', '\t']) {
            return Err(fail(
                at,
                "context rows are not accepted; body rows start with '+' and every other line is a header (PUT, CUT, \
                 REM, MV). Write a leading space inside a body as `+ text`.",
            ));
        }
        headers += 1;
        if headers > MAX_OPS {
            return Err(HostError::new(
                EDIT_AMPLIFICATION_LIMIT,
                format!(
                    "more than {MAX_OPS} operations in one call. Split the change into several Edit calls (each with \
                     the tag the previous one returned)."
                ),
            ));
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        match word {
            "REM" => {
                if !rest.is_empty() {
                    return Err(fail(at, "REM takes nothing after it; it deletes the whole file."));
                }
                p.rem = true;
            }
            "MV" => {
                if rest.is_empty() {
                    return Err(fail(at, "MV needs a destination path: `MV new/path.rs`."));
                }
                if p.mv.is_some() {
                    return Err(fail(
                        at,
                        "only one MV per call; the file moves once, after the other operations.",
                    ));
                }
                p.mv = Some(rest.to_string());
            }
            "CUT" => {
                let (loc, reg) = match rest.split_once(char::is_whitespace) {
                    Some((l, r)) => (l, Some(register(at, r.trim())?)),
                    None => (rest, None),
                };
                match locator(at, loc)? {
                    Loc::Range(from, to) => p.ops.push((
                        at,
                        Op::Cut {
                            from,
                            to,
                            reg: reg.unwrap_or(Reg::Anon),
                        },
                    )),
                    Loc::At(_) => return Err(fail(at, "CUT takes a range: `CUT N.=M` (a single line is `N.=N`).")),
                }
            }
            "PUT" => {
                if let Some(loc) = rest.strip_suffix(':') {
                    let src = Src::Body(Vec::new());
                    let op = match locator(at, loc.trim())? {
                        Loc::Range(from, to) => Op::Replace { from, to, src },
                        Loc::At(pos) => Op::Insert { at: pos, src },
                    };
                    p.ops.push((at, op));
                    body_open = Some(p.ops.len() - 1);
                } else if let Some((loc, reg)) = rest.split_once(char::is_whitespace) {
                    let src = Src::Paste(register(at, reg.trim())?);
                    let op = match locator(at, loc)? {
                        Loc::Range(from, to) => Op::Replace { from, to, src },
                        Loc::At(pos) => Op::Insert { at: pos, src },
                    };
                    p.ops.push((at, op));
                } else {
                    return Err(fail(
                        at,
                        format!("`PUT {rest}` needs ':' and + rows after it, or a register: `PUT {rest}:` or `PUT {rest} @reg`."),
                    ));
                }
            }
            _ => {
                return Err(fail(
                    at,
                    format!(
                        "'{}' is not an operation. Lines are PUT, CUT, REM or MV headers, or + body rows.",
                        line.chars().take(40).collect::<String>()
                    ),
                ))
            }
        }
    }
    if p.rem && (!p.ops.is_empty() || p.mv.is_some()) {
        return Err(fail(
            1,
            "REM deletes the file; send it alone, without other operations.",
        ));
    }
    for (at, op) in &p.ops {
        if let Op::Insert { src: Src::Body(b), .. } = op {
            if b.is_empty() {
                return Err(fail(
                    *at,
                    "this insertion has no + rows; add the lines to insert (a bare + is an empty line).",
                ));
            }
        }
    }
    if p.ops.is_empty() && !p.rem && p.mv.is_none() {
        return Err(fail(1, "no operations; send at least one PUT, CUT, REM or MV."));
    }
    if let Some((_, t)) = &p.header {
        debug_assert!(tag::is_tag(t));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(rows: &[&str]) -> Src {
        Src::Body(rows.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn every_form_parses() {
        let p = parse(
            "[src/a.rs#be03]\nPUT 2.=3:\n+x\n+\n++plus\n+-minus\n\nPUT <1:\n+head\nPUT >4:\n+after\nPUT >$:\n+tail\r\nCUT 7.=9 @blk\nCUT 10.=10\nPUT <12 @blk\nPUT >13 @\nPUT 14.=15 @blk\nPUT >$ @blk\nMV b/c.rs",
        )
        .unwrap();
        assert_eq!(p.header, Some(("src/a.rs".into(), "BE03".into())));
        let ops: Vec<_> = p.ops.iter().map(|(_, o)| o.clone()).collect();
        assert_eq!(
            ops,
            vec![
                Op::Replace {
                    from: 2,
                    to: 3,
                    src: body(&["x", "", "+plus", "-minus"])
                },
                Op::Insert {
                    at: Pos::Before(1),
                    src: body(&["head"])
                },
                Op::Insert {
                    at: Pos::After(4),
                    src: body(&["after"])
                },
                Op::Insert {
                    at: Pos::End,
                    src: body(&["tail"])
                },
                Op::Cut {
                    from: 7,
                    to: 9,
                    reg: Reg::Named("blk".into())
                },
                Op::Cut {
                    from: 10,
                    to: 10,
                    reg: Reg::Anon
                },
                Op::Insert {
                    at: Pos::Before(12),
                    src: Src::Paste(Reg::Named("blk".into()))
                },
                Op::Insert {
                    at: Pos::After(13),
                    src: Src::Paste(Reg::Anon)
                },
                Op::Replace {
                    from: 14,
                    to: 15,
                    src: Src::Paste(Reg::Named("blk".into()))
                },
                Op::Insert {
                    at: Pos::End,
                    src: Src::Paste(Reg::Named("blk".into()))
                },
            ]
        );
        assert_eq!(p.mv.as_deref(), Some("b/c.rs"));
        assert_eq!(p.ops[0].0, 2);
        assert!(parse("REM").unwrap().rem);
        // An empty replacement body deletes the range.
        assert_eq!(
            parse("PUT 3.=4:").unwrap().ops[0].1,
            Op::Replace {
                from: 3,
                to: 4,
                src: body(&[])
            }
        );
    }

    #[test]
    fn refusals_name_the_fix() {
        let code = |s: &str| parse(s).unwrap_err();
        let e = code("PUT 3.=4:\n-old\n");
        assert_eq!(e.code, "EDIT_PARSE_FAILED");
        assert!(e.message.contains("CUT N.=M"), "{}", e.message);
        assert!(code("PUT 3.=4:\n context").message.contains("ops line 2"));
        assert!(code("+x").message.contains("must follow"));
        assert!(code("CUT 1.=2\n+x").message.contains("must follow"));
        assert!(code("PUT 5:\n+x").message.contains("`5.=5`"));
        assert!(code("PUT 5.=6").message.contains("`PUT 5.=6:`"));
        assert!(code("PUT <0:\n+x").message.contains("not a line number"));
        assert!(code("PUT <x:\n+x").message.contains("not a line number"));
        assert!(code("PUT <3:").message.contains("no + rows"));
        assert!(code("CUT <3").message.contains("takes a range"));
        assert!(code("FOO 1").message.contains("not an operation"));
        assert!(code("REM\nPUT >$:\n+x").message.contains("alone"));
        assert!(code("MV").message.contains("destination"));
        assert!(code("MV a\nMV b").message.contains("only one MV"));
        assert!(code("").message.contains("no operations"));
        assert!(code("PUT <1 @bad name").message.contains("register"));
        assert_eq!(code("PUT 5.=3:\n+x").code, "EDIT_RANGE_INVALID");
        let b = code("PUT 12*:\n+x");
        assert_eq!(b.code, "EDIT_BLOCK_UNRESOLVED");
        assert!(b.message.contains("PUT 12.=M:"), "{}", b.message);
        assert_eq!(code("PUT >12*:\n+x").code, "EDIT_BLOCK_UNRESOLVED");
        assert_eq!(code("CUT 4* @a").code, "EDIT_BLOCK_UNRESOLVED");
    }

    #[test]
    fn ops_limits_at_their_boundaries() {
        let ops = |n: usize| {
            (1..=n)
                .map(|i| format!("CUT {i}.={i} @r{i}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(parse(&ops(MAX_OPS)).unwrap().ops.len(), MAX_OPS);
        let e = parse(&ops(MAX_OPS + 1)).unwrap_err();
        assert_eq!(e.code, "EDIT_AMPLIFICATION_LIMIT");
        assert!(e.message.contains("200"));
        // 256 KiB of ops exactly parses; one byte more is refused.
        let head = "PUT >$:\n+";
        let exact = format!("{head}{}", "x".repeat(MAX_OPS_BYTES - head.len()));
        assert_eq!(exact.len(), MAX_OPS_BYTES);
        assert!(parse(&exact).is_ok());
        let over = format!("{exact}x");
        assert_eq!(parse(&over).unwrap_err().code, "EDIT_AMPLIFICATION_LIMIT");
    }
}

//! Named registers (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit"): a `CUT N.=M @name`
//! keeps the cut lines for the rest of the session so a later Edit (of this or another file) can paste them. At most
//! 16 per session, least recently used dropped first. The anonymous register lives for one call only and is never
//! stored here. Captures are committed only when the Edit that made them lands.

use super::limits::{MAX_CAPTURE_BYTES, MAX_CAPTURE_LINES, MAX_EXPANDED_LINES, MAX_NAMED_REGISTERS};
use super::parse::{Op, Reg, Src};
use crate::host::error::{HostError, EDIT_AMPLIFICATION_LIMIT, EDIT_REGISTER_AMBIGUOUS, EDIT_REGISTER_EMPTY};
use std::borrow::Cow;
use std::collections::HashMap;

/// The session's named registers, most recently used last.
#[derive(Debug, Default)]
pub struct Registers {
    regs: Vec<(String, Vec<String>)>,
}

impl Registers {
    /// The lines of register `name` (marks it used).
    pub fn get(&mut self, name: &str) -> Option<Vec<String>> {
        let i = self.regs.iter().position(|(n, _)| n == name)?;
        let r = self.regs.remove(i);
        let lines = r.1.clone();
        self.regs.push(r);
        Some(lines)
    }

    /// Stores `lines` under `name`, dropping the least recently used register beyond 16.
    pub fn set(&mut self, name: &str, lines: Vec<String>) {
        self.regs.retain(|(n, _)| n != name);
        self.regs.push((name.to_string(), lines));
        if self.regs.len() > MAX_NAMED_REGISTERS {
            self.regs.remove(0);
        }
    }

    pub fn len(&self) -> usize {
        self.regs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.regs.is_empty()
    }
}

/// The captures of one call: per register, how many CUTs captured into it and the lines of the last one.
pub type Captured = HashMap<Reg, (usize, Vec<String>)>;

/// The CUTs of `ops` (in live line numbers) captured from `live_lines`. A register that is kept (named, or pasted
/// in this call) must be captured once (a named one captured twice is refused here; the anonymous one on paste) and
/// hold at most `MAX_CAPTURE_LINES` lines and `MAX_CAPTURE_BYTES` bytes.
pub fn capture(ops: &[(usize, Op)], live_lines: &[&str]) -> Result<Captured, HostError> {
    let mut captured: Captured = HashMap::new();
    // The registers in the order of their first CUT, so the first broken one in the call is the one reported.
    let mut order: Vec<&Reg> = Vec::new();
    for (_, op) in ops {
        if let Op::Cut { from, to, reg } = op {
            if !captured.contains_key(reg) {
                order.push(reg);
            }
            let lines: Vec<String> = live_lines[*from as usize - 1..*to as usize]
                .iter()
                .map(|s| s.to_string())
                .collect();
            let slot = captured.entry(reg.clone()).or_insert((0, Vec::new()));
            slot.0 += 1;
            slot.1 = lines;
        }
    }
    let pasted: Vec<&Reg> = ops
        .iter()
        .filter_map(|(_, op)| match op {
            Op::Replace { src: Src::Paste(r), .. } | Op::Insert { src: Src::Paste(r), .. } => Some(r),
            _ => None,
        })
        .collect();
    for reg in order {
        let (count, lines) = &captured[reg];
        let kept = matches!(reg, Reg::Named(_)) || pasted.contains(&reg);
        if !kept {
            continue;
        }
        if *count > 1 {
            // Reported on paste (ambiguous); a named register captured twice is refused outright.
            if let Reg::Named(n) = reg {
                return Err(HostError::new(
                    EDIT_REGISTER_AMBIGUOUS,
                    format!(
                        "register @{n} is captured by {count} CUTs in this call; give each CUT its own register name."
                    ),
                ));
            }
            continue;
        }
        let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
        if lines.len() > MAX_CAPTURE_LINES || bytes > MAX_CAPTURE_BYTES {
            return Err(HostError::new(
                EDIT_AMPLIFICATION_LIMIT,
                format!(
                    "{} would capture {} lines ({bytes} bytes); a register holds at most {MAX_CAPTURE_LINES} lines and \
                     {MAX_CAPTURE_BYTES} bytes. Move the block in smaller pieces, or CUT without a register and PUT the \
                     lines as + rows.",
                    reg.show(),
                    lines.len()
                ),
            ));
        }
    }
    Ok(captured)
}

/// The lines each operation of `ops` inserts (none for a CUT): its + rows, or the register it pastes (this call's
/// capture first, then the session's named register), at most `MAX_EXPANDED_LINES` in all.
pub fn sources<'o>(
    ops: &'o [(usize, Op)],
    captured: &'o Captured,
    regs: &mut Registers,
) -> Result<Vec<Cow<'o, [String]>>, HostError> {
    let mut sources: Vec<Cow<'o, [String]>> = Vec::with_capacity(ops.len());
    let mut expanded = 0usize;
    for (at, op) in ops {
        let src = match op {
            Op::Replace { src, .. } | Op::Insert { src, .. } => src,
            Op::Cut { .. } => {
                sources.push(Cow::Borrowed(&[]));
                continue;
            }
        };
        let lines: Cow<'o, [String]> = match src {
            Src::Body(b) => Cow::Borrowed(b),
            Src::Paste(r) => match (captured.get(r), r) {
                (Some((1, l)), _) => Cow::Borrowed(l),
                (Some(_), _) => {
                    return Err(HostError::new(
                        EDIT_REGISTER_AMBIGUOUS,
                        format!(
                            "ops line {at}: {} was captured by more than one CUT in this call; name each CUT's \
                             register (`CUT N.=M @name`) and paste by name.",
                            r.show()
                        ),
                    ))
                }
                (None, Reg::Named(n)) => match regs.get(n) {
                    Some(l) => Cow::Owned(l),
                    None => {
                        return Err(HostError::new(
                            EDIT_REGISTER_EMPTY,
                            format!(
                                "ops line {at}: register @{n} holds nothing (no CUT ... @{n} in this call or an \
                                 earlier landed Edit of this session, or it was dropped: 16 are kept). CUT the lines \
                                 into it first, or write them as + rows."
                            ),
                        ))
                    }
                },
                (None, Reg::Anon) => {
                    return Err(HostError::new(
                        EDIT_REGISTER_EMPTY,
                        format!(
                            "ops line {at}: the anonymous register is empty: it only holds a CUT without a register \
                             name from this same call. Add that CUT, or paste a named register."
                        ),
                    ))
                }
            },
        };
        expanded += lines.len();
        if expanded > MAX_EXPANDED_LINES {
            return Err(HostError::new(
                EDIT_AMPLIFICATION_LIMIT,
                format!(
                    "the operations insert more than {MAX_EXPANDED_LINES} lines in all (body rows plus pasted \
                     registers). Split the change into several Edit calls, or use Write for a whole-file rewrite."
                ),
            ));
        }
        sources.push(lines);
    }
    Ok(sources)
}

/// Keeps the named registers this call captured once (after it landed).
pub fn commit(regs: &mut Registers, captured: Captured) {
    for (reg, (count, lines)) in captured {
        if let (Reg::Named(n), 1) = (&reg, count) {
            regs.set(n, lines);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::host::edit::parse::parse;

    #[test]
    fn captures_are_counted_bounded_and_pasted_before_the_session_registers() {
        let live = ["a", "b", "c", "d"];
        let p = parse("CUT 1.=2 @x\nPUT >4 @x").unwrap();
        let c = capture(&p.ops, &live).unwrap();
        assert_eq!(c[&Reg::Named("x".into())], (1, vec!["a".to_string(), "b".to_string()]));
        let mut regs = Registers::default();
        regs.set("x", vec!["old".into()]);
        let s = sources(&p.ops, &c, &mut regs).unwrap();
        assert_eq!(s[0].len(), 0, "a CUT inserts nothing");
        assert_eq!(
            s[1].as_ref(),
            ["a".to_string(), "b".to_string()],
            "this call's capture wins"
        );
        // A named register captured twice is refused at once; the anonymous one only when pasted.
        let p = parse("CUT 1.=1 @x\nCUT 3.=3 @x").unwrap();
        assert_eq!(capture(&p.ops, &live).unwrap_err().code, EDIT_REGISTER_AMBIGUOUS);
        let p = parse("CUT 1.=1\nCUT 3.=3").unwrap();
        assert!(capture(&p.ops, &live).is_ok());
        let p = parse("CUT 1.=1\nCUT 3.=3\nPUT >4 @").unwrap();
        let c = capture(&p.ops, &live).unwrap();
        assert_eq!(
            sources(&p.ops, &c, &mut regs).unwrap_err().code,
            EDIT_REGISTER_AMBIGUOUS
        );
        // Empty registers.
        let p = parse("PUT >4 @nothing").unwrap();
        let e = sources(&p.ops, &Captured::new(), &mut regs).unwrap_err();
        assert_eq!(e.code, EDIT_REGISTER_EMPTY);
        assert!(e.message.contains("register @nothing holds nothing"), "{}", e.message);
        let p = parse("PUT >4 @").unwrap();
        assert_eq!(
            sources(&p.ops, &Captured::new(), &mut regs).unwrap_err().code,
            EDIT_REGISTER_EMPTY
        );
        // Commit keeps the named captures only.
        let p = parse("CUT 1.=1 @y\nCUT 2.=2").unwrap();
        commit(&mut regs, capture(&p.ops, &live).unwrap());
        assert_eq!(regs.get("y"), Some(vec!["a".to_string()]));
    }

    #[test]
    fn a_capture_holds_at_most_the_limit_in_lines() {
        let big: Vec<String> = (0..=MAX_CAPTURE_LINES).map(|i| i.to_string()).collect();
        let live: Vec<&str> = big.iter().map(String::as_str).collect();
        let at_limit = parse(&format!("CUT 1.={MAX_CAPTURE_LINES} @r")).unwrap();
        assert!(capture(&at_limit.ops, &live).is_ok());
        let over = parse(&format!("CUT 1.={} @r", MAX_CAPTURE_LINES + 1)).unwrap();
        assert_eq!(capture(&over.ops, &live).unwrap_err().code, EDIT_AMPLIFICATION_LIMIT);
        // Unkept (an anonymous CUT nobody pastes): no limit.
        let anon = parse(&format!("CUT 1.={}", MAX_CAPTURE_LINES + 1)).unwrap();
        assert!(capture(&anon.ops, &live).is_ok());
    }

    #[test]
    fn keeps_16_dropping_the_least_recently_used() {
        let mut r = Registers::default();
        for i in 0..MAX_NAMED_REGISTERS {
            r.set(&format!("r{i}"), vec![i.to_string()]);
        }
        assert_eq!(r.len(), 16);
        assert_eq!(r.get("r0"), Some(vec!["0".to_string()])); // r1 is now the oldest
        r.set("new", vec![]);
        assert_eq!(r.len(), 16);
        assert!(r.get("r1").is_none());
        assert!(r.get("r0").is_some());
        r.set("r0", vec!["again".into()]);
        assert_eq!(r.get("r0"), Some(vec!["again".to_string()]));
        assert_eq!(r.len(), 16);
    }
}

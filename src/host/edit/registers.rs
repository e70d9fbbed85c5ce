//! Named registers (docs/spec/host-tools.md "Read, Grep, Write and the line-anchored Edit"): a `CUT N.=M @name`
//! keeps the cut lines for the rest of the session so a later Edit (of this or another file) can paste them. At most
//! 16 per session, least recently used dropped first. The anonymous register lives for one call only and is never
//! stored here. Captures are committed only when the Edit that made them lands.

use super::limits::MAX_NAMED_REGISTERS;

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

#[cfg(test)]
mod tests {
    use super::*;

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

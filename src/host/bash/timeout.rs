//! Bash's timeout rule (docs/spec/host-tools.md §Bash): the default is 60 s and a budget is 1..21,600 seconds, but
//! models trained on millisecond tools send `120000`, so the schema takes up to 100,000,000 and any value above
//! 21,600 is read as milliseconds, converted and clamped to 21,600 s. In-range values (600, 1800) stay seconds.

use crate::host::error::HostError;
use serde_json::Value;
use std::time::Duration;

/// The budget when the call names none.
pub const DEFAULT_SECONDS: u64 = 60;
/// The longest budget, in seconds (6 hours); also the boundary above which a value means milliseconds.
pub const MAX_SECONDS: u64 = 21_600;
/// The largest value the schema accepts (milliseconds by then).
pub const SCHEMA_MAX: u64 = 100_000_000;

/// The effective timeout of a Bash call from its `timeout` argument (absent or null = the default).
pub fn parse(v: Option<&Value>) -> Result<Duration, HostError> {
    let bad = || {
        HostError::invalid(format!(
            "Bash: `timeout` must be a whole number of seconds from 1 to {MAX_SECONDS} (values above {MAX_SECONDS} \
             up to {SCHEMA_MAX} are read as milliseconds); call again with one, or omit it for {DEFAULT_SECONDS} s."
        ))
    };
    let n = match v {
        None | Some(Value::Null) => return Ok(Duration::from_secs(DEFAULT_SECONDS)),
        Some(Value::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(u), _) => u,
            (None, Some(f)) if f.fract() == 0.0 && f >= 0.0 && f <= SCHEMA_MAX as f64 => f as u64,
            _ => return Err(bad()),
        },
        Some(_) => return Err(bad()),
    };
    match n {
        0 => Err(bad()),
        1..=MAX_SECONDS => Ok(Duration::from_secs(n)),
        n if n <= SCHEMA_MAX => Ok(Duration::from_millis(n).min(Duration::from_secs(MAX_SECONDS))),
        _ => Err(bad()),
    }
}

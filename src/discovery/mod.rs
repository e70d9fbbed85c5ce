//! Tool Discovery: the managed deferred set, the on-demand host tools, `find_tools` query ranking and load
//! semantics (docs/spec/toolkit.md §8; docs/rules.md "On-demand host tools").
//!
//! Why it reads the rules decision: a deferred name is loadable only when the very same decision the sync uses
//! says it would be active now, so `find_tools` can never show or load something the projection would refuse.

pub mod catalog;
pub mod eligibility;
pub mod evidence;
pub mod find;

pub use find::{find_tools, FindRequest};

//! Nested `apply_patch`: the patch executor behind the direct tool. Until the patch module is part of this
//! build, nested patches are refused with `adapter-disabled` (nothing is written).

use std::path::PathBuf;

use serde_json::Value;

use super::errors::CodeError;

/// Applies `patch` in `cwd` with the same executor, containment and process-wide lock as the direct tool.
pub async fn apply(_cwd: PathBuf, _patch: String) -> Result<Value, CodeError> {
    Err(CodeError::new("adapter-disabled", "The apply_patch executor is not part of this build; nothing was changed."))
}

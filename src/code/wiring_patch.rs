//! Nested `apply_patch`: the very `patch::apply` executor behind the direct tool (same parser, containment,
//! preflight-before-write and process-wide patch lock), run on a blocking thread.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use serde_json::{json, Value};

use super::errors::{CellCode, CodeError, ErrorCode};
use crate::patch;

/// Applies `patch` in `cwd`; the reply carries the model text and the operations, an error its stable code and
/// the exact `apply_patch failed (...)` text. `abort` is the cell's seal: once set (terminate, close) a patch
/// still before its first commit step stops with `aborted` and changes nothing. `review`: the outer session, which
/// records the review changes (docs/review.md); its mutation permit is taken first (after Pi's file queue lease,
/// before the process-wide patch lock), like the direct tool's.
pub async fn apply(
    cwd: PathBuf,
    text: String,
    abort: Arc<AtomicBool>,
    review: Option<crate::review::Target>,
) -> Result<Value, CodeError> {
    let permit = match &review {
        Some(t) => match crate::review::lock::acquire_abortable(&t.session_id, &abort).await {
            Some(p) => Some(p),
            None => {
                let e = patch::PatchError::no_change(patch::PatchCode::Aborted, "aborted");
                return Err(CodeError::new(ErrorCode::Patch(e.code), e.to_string()));
            }
        },
        None => None,
    };
    let out = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        patch::apply_reviewed(&cwd, &text, &abort, review.as_ref())
    })
    .await
    .map_err(|e| CodeError::new(CellCode::Unavailable, format!("The patch executor failed to run: {e}")))?;
    match out {
        Ok(applied) => Ok(json!({
            "text": applied.text(),
            "operations": applied.operations.iter().map(|o| json!({
                "operation": o.kind.as_str(), "path": o.path, "from": o.from,
            })).collect::<Vec<_>>(),
        })),
        Err(e) => Err(CodeError::new(ErrorCode::Patch(e.code), e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn applies_and_refuses_like_the_direct_tool() {
        let dir = tempfile::tempdir().unwrap();
        let ok = apply(
            dir.path().into(),
            "*** Begin Patch\n*** Add File: made.txt\n+hi\n*** End Patch".into(),
            Default::default(),
            None,
        )
        .await
        .unwrap();
        assert_eq!(ok["text"], "Applied patch:\n- add made.txt");
        assert_eq!(std::fs::read_to_string(dir.path().join("made.txt")).unwrap(), "hi\n");
        let e = apply(
            dir.path().into(),
            "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch".into(),
            Default::default(),
            None,
        )
        .await
        .unwrap_err();
        assert!(e.message.starts_with("apply_patch failed (no-change)"), "{}", e.message);
        assert!(!dir.path().join("../escape.txt").exists());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_nested_patch_records_review_changes_for_the_outer_session() {
        let dir = tempfile::tempdir().unwrap();
        let agent = tempfile::tempdir().unwrap();
        let target = crate::review::Target {
            agent_dir: agent.path().into(),
            session_id: "nested-1".into(),
            message_id: Some("m".into()),
            session_file: None,
            tool: "apply_patch".into(),
            agent: None,
        };
        apply(
            dir.path().into(),
            "*** Begin Patch\n*** Add File: n.txt\n+hi\n*** End Patch".into(),
            Default::default(),
            Some(target),
        )
        .await
        .unwrap();
        let changes = crate::review::store::Store::of(agent.path(), "nested-1")
            .unwrap()
            .load()
            .unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(
            (changes[0].path.as_str(), changes[0].tool.as_str()),
            ("n.txt", "apply_patch")
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sealed_cell_aborts_its_patch_before_any_change() {
        let dir = tempfile::tempdir().unwrap();
        let e = apply(
            dir.path().into(),
            "*** Begin Patch\n*** Add File: never.txt\n+x\n*** End Patch".into(),
            Arc::new(AtomicBool::new(true)),
            None,
        )
        .await
        .unwrap_err();
        assert_eq!(e.code, "aborted");
        assert!(!dir.path().join("never.txt").exists());
    }
}

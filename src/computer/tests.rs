use super::*;
use serde_json::json;

#[test]
fn app_targets_are_names_or_bundle_ids() {
    for ok in [
        "Safari",
        "com.apple.Safari",
        "Visual Studio Code",
        &"x".repeat(MAX_APP_TARGET),
    ] {
        assert_eq!(check_app_target(ok), Ok(()), "{ok}");
    }
    for bad in [
        "",
        " Safari",
        "/Applications/Safari.app",
        "Safari.app",
        "https://x",
        "42",
        "a\tb",
        &"x".repeat(MAX_APP_TARGET + 1),
    ] {
        assert_eq!(check_app_target(bad).unwrap_err().code, "invalid-app-target", "{bad:?}");
    }
}

#[test]
fn check_call_maps_names_and_limits_text() {
    let (tool, _, app) = check_call("computer_use_list_apps", &Value::Null).unwrap();
    assert_eq!((tool.as_str(), app), ("list_apps", None));
    let (tool, _, app) = check_call("computer_use_click", &json!({"app": "Notes", "x": 0, "y": 3.5})).unwrap();
    assert_eq!((tool.as_str(), app.as_deref()), ("click", Some("Notes")));
    let at = json!({"app": "Notes", "text": "é".repeat(MAX_TEXT)});
    assert!(check_call("computer_use_type_text", &at).is_ok());
    let over = json!({"app": "Notes", "text": "é".repeat(MAX_TEXT + 1)});
    assert_eq!(
        check_call("computer_use_type_text", &over).unwrap_err().code,
        "invalid-arguments"
    );
    assert_eq!(
        check_call("computer_use_drag", &json!({})).unwrap_err().code,
        "unknown-tool"
    );
    assert_eq!(check_call("click", &json!({})).unwrap_err().code, "unknown-tool");
}

#[test]
fn approvals_ask_once_per_app_and_reset() {
    let a = Approvals::default();
    assert_eq!(a.gate("confirm", None, false), Ok(Gate::Go));
    assert_eq!(a.gate("confirm", Some("Notes"), true), Ok(Gate::Ask("Notes".into())));
    assert_eq!(
        a.gate("confirm", Some("Notes"), false).unwrap_err().code,
        "approval-unavailable"
    );
    a.approve("Notes");
    assert_eq!(a.gate("confirm", Some("Notes"), false), Ok(Gate::Go));
    assert_eq!(a.gate("always", Some("Safari"), false), Ok(Gate::Go));
    a.reset();
    assert_eq!(a.gate("confirm", Some("Notes"), true), Ok(Gate::Ask("Notes".into())));
}

#[test]
fn approvals_reset_when_the_mode_changes() {
    let a = Approvals::default();
    assert_eq!(a.gate("confirm", Some("Notes"), true), Ok(Gate::Ask("Notes".into())));
    a.approve("Notes");
    assert_eq!(a.gate("confirm", Some("Notes"), true), Ok(Gate::Go));
    // always → confirm: asked again (the set was cleared when the mode changed).
    assert_eq!(a.gate("always", Some("Notes"), true), Ok(Gate::Go));
    assert_eq!(a.gate("confirm", Some("Notes"), true), Ok(Gate::Ask("Notes".into())));
    // A call with no app still notices the change.
    a.approve("Notes");
    assert_eq!(a.gate("always", None, true), Ok(Gate::Go));
    assert_eq!(a.gate("confirm", Some("Notes"), true), Ok(Gate::Ask("Notes".into())));
}

#[test]
fn approvals_are_keyed_by_the_canonical_app() {
    let a = Approvals::default();
    // Before list_apps named the pair, a name and a bundle id are two apps (asked twice, never fewer); names fold case.
    a.gate("confirm", None, true).unwrap();
    a.approve("Safari");
    assert_eq!(a.gate("confirm", Some("safari"), true), Ok(Gate::Go));
    assert_eq!(
        a.gate("confirm", Some("com.apple.Safari"), true),
        Ok(Gate::Ask("com.apple.Safari".into()))
    );
    // list_apps names the pairs (text lines and structured entries): the earlier approval now covers the id.
    a.learn(
        "Safari (com.apple.Safari)\n- Notes (com.apple.Notes)\nnot a pair\nEvil (../x)",
        &json!({"apps": [{"name": "Visual Studio Code", "bundleId": "com.microsoft.VSCode"}, {"name": "Bad", "bundleId": "no dots"}]}),
    );
    assert_eq!(a.gate("confirm", Some("com.apple.Safari"), true), Ok(Gate::Go));
    assert_eq!(a.gate("confirm", Some("COM.APPLE.SAFARI"), true), Ok(Gate::Go));
    assert_eq!(a.gate("confirm", Some("Notes"), true), Ok(Gate::Ask("Notes".into())));
    a.approve("com.apple.Notes");
    assert_eq!(a.gate("confirm", Some("Notes"), true), Ok(Gate::Go));
    a.approve("Visual Studio Code");
    assert_eq!(a.gate("confirm", Some("com.microsoft.VSCode"), true), Ok(Gate::Go));
    assert_eq!(a.gate("confirm", Some("Bad"), true), Ok(Gate::Ask("Bad".into())));
}

/// A ChatGPT.app resources folder and a CODEX_HOME with everything the probe checks, in a temp folder.
fn layout() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let res = t.path().join("Resources");
    for (rel, dir) in COMPONENTS {
        let p = res.join(rel);
        if dir {
            std::fs::create_dir_all(&p).unwrap();
        } else {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, b"#!/bin/sh\n").unwrap();
        }
    }
    let home = t.path().join("codex-home");
    std::fs::create_dir_all(home.join(HELPER)).unwrap();
    (t, res, home)
}

#[test]
fn the_probe_names_each_missing_prerequisite() {
    let (_t, res, home) = layout();
    let p = |platform: &str, res: &std::path::Path, home: &std::path::Path| Prereqs {
        platform: platform.into(),
        resources: Some(res.to_path_buf()),
        codex_home: Some(home.to_path_buf()),
        program: None,
        args: vec![],
        server: "computer-use".into(),
    };
    let ok = probe_with(&p("darwin", &res, &home));
    assert_eq!(ok.reason, None);
    assert_eq!(ok.program, Some(res.join("codex").display().to_string()));
    assert_eq!(
        probe_with(&p("linux", &res, &home)).reason,
        Some(CuCode::UnsupportedPlatform)
    );
    assert_eq!(probe_with(&p("win32", &res, &home)).program, None);
    // Each bundled component in turn: missing, or of the wrong kind.
    for (rel, dir) in COMPONENTS {
        let path = res.join(rel);
        let moved = path.with_extension("away");
        std::fs::rename(&path, &moved).unwrap();
        assert_eq!(
            probe_with(&p("darwin", &res, &home)).reason,
            Some(CuCode::MissingDesktopComponent),
            "{rel}"
        );
        if dir {
            std::fs::write(&path, b"").unwrap();
        } else {
            std::fs::create_dir(&path).unwrap();
        }
        assert_eq!(
            probe_with(&p("darwin", &res, &home)).reason,
            Some(CuCode::MissingDesktopComponent),
            "{rel} kind"
        );
        if dir {
            std::fs::remove_file(&path).unwrap();
        } else {
            std::fs::remove_dir(&path).unwrap();
        }
        std::fs::rename(&moved, &path).unwrap();
    }
    assert_eq!(probe_with(&p("darwin", &res, &home)).reason, None);
    // The helper app under CODEX_HOME.
    std::fs::remove_dir(home.join(HELPER)).unwrap();
    assert_eq!(
        probe_with(&p("darwin", &res, &home)).reason,
        Some(CuCode::MissingHelper)
    );
    assert_eq!(unavailable_error(CuCode::MissingHelper).code, CuCode::MissingHelper);
    assert_eq!(
        unavailable_error(CuCode::MissingDesktopComponent).code,
        CuCode::MissingDesktopComponent
    );
}

#[test]
fn off_macos_the_probe_is_unsupported_without_spawning() {
    if std::env::var_os(SEAM_VAR).is_none() && !cfg!(target_os = "macos") {
        let p = probe();
        assert_eq!(p.reason, Some(CuCode::UnsupportedPlatform));
        assert_eq!(p.program, None);
    }
    let seam = |s: &str| probe_with(&Prereqs::from_seam(s)).reason;
    assert_eq!(seam(r#"{"platform":"linux"}"#), Some(CuCode::UnsupportedPlatform));
    assert_eq!(
        seam(r#"{"platform":"darwin","program":"/nonexistent"}"#),
        Some(CuCode::MissingDesktopComponent)
    );
    assert_eq!(seam(r#"{"platform":"darwin"}"#), Some(CuCode::MissingDesktopComponent));
    assert_eq!(
        seam(r#"{"platform":"darwin","program":"/bin/sh","codexHome":"/nonexistent"}"#),
        Some(CuCode::MissingHelper)
    );
    assert_eq!(seam(r#"{"platform":"darwin","program":"/bin/sh"}"#), None);
}

#[test]
fn the_doc_table_is_every_code_in_order_and_index_d_ts_has_the_unions() {
    use crate::codes::check::{doc_table, dts_union, with_extra};
    let all: Vec<&str> = CuCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(doc_table(include_str!("../../docs/computer.md"), "### Errors"), all);
    let dts = include_str!("../../index.d.ts");
    assert_eq!(
        dts_union(dts, "ComputerFailure", "code"),
        with_extra(all.iter().copied(), &["internal-panic"])
    );
    // The probe's reasons are the first three codes, in the order it checks them.
    let reasons = [
        CuCode::UnsupportedPlatform,
        CuCode::MissingDesktopComponent,
        CuCode::MissingHelper,
    ];
    assert_eq!(reasons, CuCode::ALL[..3]);
    assert_eq!(
        dts_union(dts, "ComputerProbe", "reason"),
        with_extra(reasons.map(CuCode::as_str), &["null"])
    );
}

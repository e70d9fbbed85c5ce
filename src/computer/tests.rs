use super::*;

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
fn off_macos_the_probe_is_unsupported_without_spawning() {
    if std::env::var_os(SEAM_VAR).is_none() && !cfg!(target_os = "macos") {
        let p = probe();
        assert_eq!(p.reason, Some("unsupported-platform"));
        assert_eq!(p.program, None);
    }
    assert_eq!(
        probe_seam(r#"{"platform":"linux"}"#).reason,
        Some("unsupported-platform")
    );
    assert_eq!(
        probe_seam(r#"{"platform":"darwin","program":"/nonexistent"}"#).reason,
        Some("components-missing")
    );
}

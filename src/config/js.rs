//! The config's raw JSON as it crosses to and from JavaScript, with `JSON.parse` / `JSON.stringify` semantics
//! (docs/config.md §Raw object). napi's own `serde_json::Value` conversion sets keys with `napi_set_property`, so a
//! `"__proto__"` key runs the prototype setter (the object's prototype is replaced and the key is gone), and it
//! reads keys with `napi_get_property_names`, which also walks the prototype chain. Here every key is defined as an
//! own data property and only own enumerable string keys are read back, so `"__proto__"` stays a plain key and is
//! written back on save.

use napi::bindgen_prelude::*;
use napi::sys;
use serde_json::{Map, Value};
use std::ptr;

/// Nesting and value budgets of one conversion: napi's own (128 levels, one million values), so JS input is refused
/// where napi would refuse it. Config files stay far below both (docs/config.md §Limits).
const MAX_DEPTH: u32 = 128;
const MAX_NODES: usize = 1_000_000;

/// A JSON value converted with `JSON.parse` / `JSON.stringify` key semantics.
#[derive(Debug, Clone, PartialEq)]
pub struct Json(pub Value);

impl TypeName for Json {
    fn type_name() -> &'static str {
        "unknown"
    }

    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ValidateNapiValue for Json {}

fn budget_error(what: &str) -> Error {
    Error::new(Status::InvalidArg, format!("Exceeded maximum JSON {what}"))
}

impl ToNapiValue for Json {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let mut nodes = MAX_NODES;
        // SAFETY: `env` is the live environment napi-rs passed to this conversion on the JS thread.
        unsafe { to_js(env, &val.0, MAX_DEPTH, &mut nodes) }
    }
}

impl FromNapiValue for Json {
    unsafe fn from_napi_value(env: sys::napi_env, napi_val: sys::napi_value) -> Result<Self> {
        let mut nodes = MAX_NODES;
        // SAFETY: `env` and `napi_val` come from napi-rs for this call on the JS thread.
        unsafe { from_js(env, napi_val, MAX_DEPTH, &mut nodes) }.map(Json)
    }
}

fn take_node(nodes: &mut usize) -> Result<()> {
    *nodes = nodes.checked_sub(1).ok_or_else(|| budget_error("value count"))?;
    Ok(())
}

/// `v` as a JS value, within the depth and node budgets.
///
/// # Safety
/// `env` must be the live environment of the current napi call, used on the JS thread that owns it.
unsafe fn to_js(env: sys::napi_env, v: &Value, depth: u32, nodes: &mut usize) -> Result<sys::napi_value> {
    take_node(nodes)?;
    match v {
        Value::Array(items) => {
            let depth = depth.checked_sub(1).ok_or_else(|| budget_error("nesting depth"))?;
            let mut arr = ptr::null_mut();
            // SAFETY: `env` is live on this thread and `arr` is a valid out-pointer.
            check_status!(unsafe { sys::napi_create_array_with_length(env, items.len(), &mut arr) })?;
            for (i, item) in items.iter().enumerate() {
                // SAFETY: same `env` as the caller's contract; the recursion is bounded by `depth` and `nodes`.
                let js = unsafe { to_js(env, item, depth, nodes)? };
                // SAFETY: `arr` was created above in this `env`; `js` is a value of the same `env`.
                check_status!(unsafe { sys::napi_set_element(env, arr, i as u32, js) })?;
            }
            Ok(arr)
        }
        Value::Object(map) => {
            let depth = depth.checked_sub(1).ok_or_else(|| budget_error("nesting depth"))?;
            let mut obj = ptr::null_mut();
            // SAFETY: `env` is live on this thread and `obj` is a valid out-pointer.
            check_status!(unsafe { sys::napi_create_object(env, &mut obj) })?;
            for (k, item) in map {
                // SAFETY: same `env` as the caller's contract; the recursion is bounded by `depth` and `nodes`.
                let value = unsafe { to_js(env, item, depth, nodes)? };
                let mut name = ptr::null_mut();
                // SAFETY: `k` is a live `&str`: the pointer and byte length describe valid UTF-8; `name` is a valid out-pointer.
                check_status!(unsafe {
                    sys::napi_create_string_utf8(env, k.as_ptr().cast(), k.len() as isize, &mut name)
                })?;
                // A defined (not assigned) property: what JSON.parse does, so no setter ever runs.
                let desc = sys::napi_property_descriptor {
                    utf8name: ptr::null(),
                    name,
                    method: None,
                    getter: None,
                    setter: None,
                    value,
                    attributes: sys::PropertyAttributes::writable
                        | sys::PropertyAttributes::enumerable
                        | sys::PropertyAttributes::configurable,
                    data: ptr::null_mut(),
                };
                // SAFETY: `obj`, `name` and `value` belong to this `env`; `desc` is one initialised descriptor.
                check_status!(unsafe { sys::napi_define_properties(env, obj, 1, &desc) })?;
            }
            Ok(obj)
        }
        // SAFETY: scalars go through napi-rs's own conversion with the caller's live `env`.
        scalar => unsafe { <&Value as ToNapiValue>::to_napi_value(env, scalar) },
    }
}

/// The JS value `v` as JSON data, within the depth and node budgets.
///
/// # Safety
/// `env` must be the live environment of the current napi call, used on its JS thread, and `v` a value of it.
unsafe fn from_js(env: sys::napi_env, v: sys::napi_value, depth: u32, nodes: &mut usize) -> Result<Value> {
    take_node(nodes)?;
    let mut ty = 0;
    // SAFETY: `v` is a value of this live `env`; `ty` is a valid out-pointer.
    check_status!(unsafe { sys::napi_typeof(env, v, &mut ty) })?;
    if ty != sys::ValueType::napi_object {
        // SAFETY: `v` is a non-object value of this `env`; napi-rs converts scalars itself.
        return unsafe { Value::from_napi_value(env, v) };
    }
    let depth = depth.checked_sub(1).ok_or_else(|| budget_error("nesting depth"))?;
    let mut is_array = false;
    // SAFETY: `v` is a value of this `env`; `is_array` is a valid out-pointer.
    check_status!(unsafe { sys::napi_is_array(env, v, &mut is_array) })?;
    if is_array {
        let mut len = 0u32;
        // SAFETY: `v` is an array of this `env` (checked just above); `len` is a valid out-pointer.
        check_status!(unsafe { sys::napi_get_array_length(env, v, &mut len) })?;
        let mut out = Vec::with_capacity(len as usize);
        for i in 0..len {
            let mut item = ptr::null_mut();
            // SAFETY: `i` < the array's length; `item` is a valid out-pointer.
            check_status!(unsafe { sys::napi_get_element(env, v, i, &mut item) })?;
            // SAFETY: `item` belongs to this `env`; the recursion is bounded by `depth` and `nodes`.
            out.push(unsafe { from_js(env, item, depth, nodes)? });
        }
        return Ok(Value::Array(out));
    }
    let mut keys = ptr::null_mut();
    // SAFETY: `v` is an object of this `env` (typeof checked above); `keys` is a valid out-pointer.
    check_status!(unsafe {
        sys::napi_get_all_property_names(
            env,
            v,
            sys::KeyCollectionMode::own_only,
            sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
            sys::KeyConversion::numbers_to_strings,
            &mut keys,
        )
    })?;
    let mut len = 0u32;
    // SAFETY: `keys` is the array napi_get_all_property_names returned in this `env`.
    check_status!(unsafe { sys::napi_get_array_length(env, keys, &mut len) })?;
    let mut map = Map::new();
    for i in 0..len {
        let mut key = ptr::null_mut();
        // SAFETY: `i` < the key array's length; `key` is a valid out-pointer.
        check_status!(unsafe { sys::napi_get_element(env, keys, i, &mut key) })?;
        let mut item = ptr::null_mut();
        // An own "__proto__" data property shadows the accessor, so this reads the key, not the prototype.
        // SAFETY: `v` is an object and `key` one of its own keys, both of this `env`.
        check_status!(unsafe { sys::napi_get_property(env, v, key, &mut item) })?;
        let mut item_ty = 0;
        // SAFETY: `item` is a value of this `env`; `item_ty` is a valid out-pointer.
        check_status!(unsafe { sys::napi_typeof(env, item, &mut item_ty) })?;
        if item_ty == sys::ValueType::napi_undefined {
            continue; // JSON.stringify leaves undefined properties out
        }
        // SAFETY: `key` is a string (keys are converted with numbers_to_strings and symbols skipped).
        let name = unsafe { String::from_napi_value(env, key)? };
        // SAFETY: `item` belongs to this `env`; the recursion is bounded by `depth` and `nodes`.
        map.insert(name, unsafe { from_js(env, item, depth, nodes)? });
    }
    Ok(Value::Object(map))
}

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
        unsafe { to_js(env, &val.0, MAX_DEPTH, &mut nodes) }
    }
}

impl FromNapiValue for Json {
    unsafe fn from_napi_value(env: sys::napi_env, napi_val: sys::napi_value) -> Result<Self> {
        let mut nodes = MAX_NODES;
        unsafe { from_js(env, napi_val, MAX_DEPTH, &mut nodes) }.map(Json)
    }
}

fn take_node(nodes: &mut usize) -> Result<()> {
    *nodes = nodes.checked_sub(1).ok_or_else(|| budget_error("value count"))?;
    Ok(())
}

unsafe fn to_js(env: sys::napi_env, v: &Value, depth: u32, nodes: &mut usize) -> Result<sys::napi_value> {
    take_node(nodes)?;
    match v {
        Value::Array(items) => {
            let depth = depth.checked_sub(1).ok_or_else(|| budget_error("nesting depth"))?;
            let mut arr = ptr::null_mut();
            check_status!(unsafe { sys::napi_create_array_with_length(env, items.len(), &mut arr) })?;
            for (i, item) in items.iter().enumerate() {
                let js = unsafe { to_js(env, item, depth, nodes)? };
                check_status!(unsafe { sys::napi_set_element(env, arr, i as u32, js) })?;
            }
            Ok(arr)
        }
        Value::Object(map) => {
            let depth = depth.checked_sub(1).ok_or_else(|| budget_error("nesting depth"))?;
            let mut obj = ptr::null_mut();
            check_status!(unsafe { sys::napi_create_object(env, &mut obj) })?;
            for (k, item) in map {
                let value = unsafe { to_js(env, item, depth, nodes)? };
                let mut name = ptr::null_mut();
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
                check_status!(unsafe { sys::napi_define_properties(env, obj, 1, &desc) })?;
            }
            Ok(obj)
        }
        scalar => unsafe { <&Value as ToNapiValue>::to_napi_value(env, scalar) },
    }
}

unsafe fn from_js(env: sys::napi_env, v: sys::napi_value, depth: u32, nodes: &mut usize) -> Result<Value> {
    take_node(nodes)?;
    let mut ty = 0;
    check_status!(unsafe { sys::napi_typeof(env, v, &mut ty) })?;
    if ty != sys::ValueType::napi_object {
        return unsafe { Value::from_napi_value(env, v) };
    }
    let depth = depth.checked_sub(1).ok_or_else(|| budget_error("nesting depth"))?;
    let mut is_array = false;
    check_status!(unsafe { sys::napi_is_array(env, v, &mut is_array) })?;
    if is_array {
        let mut len = 0u32;
        check_status!(unsafe { sys::napi_get_array_length(env, v, &mut len) })?;
        let mut out = Vec::with_capacity(len as usize);
        for i in 0..len {
            let mut item = ptr::null_mut();
            check_status!(unsafe { sys::napi_get_element(env, v, i, &mut item) })?;
            out.push(unsafe { from_js(env, item, depth, nodes)? });
        }
        return Ok(Value::Array(out));
    }
    let mut keys = ptr::null_mut();
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
    check_status!(unsafe { sys::napi_get_array_length(env, keys, &mut len) })?;
    let mut map = Map::new();
    for i in 0..len {
        let mut key = ptr::null_mut();
        check_status!(unsafe { sys::napi_get_element(env, keys, i, &mut key) })?;
        let mut item = ptr::null_mut();
        // An own "__proto__" data property shadows the accessor, so this reads the key, not the prototype.
        check_status!(unsafe { sys::napi_get_property(env, v, key, &mut item) })?;
        let mut item_ty = 0;
        check_status!(unsafe { sys::napi_typeof(env, item, &mut item_ty) })?;
        if item_ty == sys::ValueType::napi_undefined {
            continue; // JSON.stringify leaves undefined properties out
        }
        let name = unsafe { String::from_napi_value(env, key)? };
        map.insert(name, unsafe { from_js(env, item, depth, nodes)? });
    }
    Ok(Value::Object(map))
}

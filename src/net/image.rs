//! Image Generation: the `openai_generate_image` request body, the PNG check of the answer and the exclusive write
//! of the file under the agent dir (docs/net.md §Image Generation).
//!
//! The file is created with `O_CREAT|O_EXCL` (`create_new`) under a fresh UUID name, so an existing file is never
//! overwritten; a failed write removes the partial file, so nothing half-written stays behind.

use crate::net::error::{NetCode, NetError};
use base64::Engine;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The fixed image model (the selected route only carries the credential).
pub const IMAGE_MODEL: &str = "gpt-image-2";

/// The PNG signature every answer must start with.
pub const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

/// The largest decoded image accepted (bytes): far above a 4096x4096 PNG from the service, small enough that a
/// runaway body cannot fill the disk or the model context.
pub const MAX_IMAGE_BYTES: usize = 48 * 1024 * 1024;

/// The longest prompt accepted (characters).
pub const MAX_PROMPT_CHARS: usize = 32_000;

const QUALITIES: [&str; 4] = ["auto", "low", "medium", "high"];

/// `size`: `auto` or `<width>x<height>` with both sides 1..=8192.
fn valid_size(s: &str) -> bool {
    if s == "auto" {
        return true;
    }
    let Some((w, h)) = s.split_once('x') else { return false };
    let side = |v: &str| {
        !v.is_empty() && v.len() <= 4 && v.bytes().all(|b| b.is_ascii_digit()) && !v.starts_with('0') && {
            let n: u32 = v.parse().unwrap_or(0);
            (1..=8192).contains(&n)
        }
    };
    side(w) && side(h)
}

/// Validates `{prompt, size?, quality?}` and builds the request body.
pub fn request_body(args: &Value) -> Result<Value, NetError> {
    let bad = |d: String| Err(NetError::new(NetCode::InvalidArguments, d));
    let Some(obj) = args.as_object() else {
        return bad("the arguments must be an object {prompt, size?, quality?}".into());
    };
    if let Some(k) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "prompt" | "size" | "quality"))
    {
        return bad(format!(
            "unknown field \"{k}\": openai_generate_image takes {{prompt, size?, quality?}}"
        ));
    }
    let prompt = match obj.get("prompt") {
        Some(Value::String(p)) if !p.trim().is_empty() => p,
        _ => return bad("prompt must be a non-empty string".into()),
    };
    if prompt.chars().count() > MAX_PROMPT_CHARS {
        return bad(format!(
            "prompt is longer than {MAX_PROMPT_CHARS} characters; shorten it"
        ));
    }
    let quality = match obj.get("quality") {
        None | Some(Value::Null) => "auto",
        Some(Value::String(q)) if QUALITIES.contains(&q.as_str()) => q.as_str(),
        _ => return bad("quality must be one of auto, low, medium, high".into()),
    };
    let size = match obj.get("size") {
        None | Some(Value::Null) => "auto",
        Some(Value::String(s)) if valid_size(s) => s.as_str(),
        _ => return bad("size must be \"auto\" or \"<width>x<height>\" such as \"1024x1024\"".into()),
    };
    Ok(json!({
        "prompt": prompt,
        "model": IMAGE_MODEL,
        "background": "auto",
        "quality": quality,
        "size": size,
    }))
}

/// Decodes `data[0].b64_json` and checks the PNG signature and the size limit.
pub fn decode_png(body: &str, max_bytes: usize) -> Result<Vec<u8>, NetError> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| NetError::new(NetCode::InvalidJson, format!("the response body is not JSON ({e})")))?;
    let b64 = v
        .pointer("/data/0/b64_json")
        .and_then(Value::as_str)
        .ok_or_else(|| NetError::new(NetCode::InvalidImage, "the response has no data[0].b64_json"))?;
    // Base64 is 4/3 of the bytes: refuse before decoding a body that cannot fit.
    if b64.len() / 4 * 3 > max_bytes + 3 {
        return Err(NetError::new(
            NetCode::ImageTooLarge,
            format!("the image is larger than {max_bytes} bytes"),
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| NetError::new(NetCode::InvalidImage, format!("data[0].b64_json is not base64 ({e})")))?;
    if bytes.len() > max_bytes {
        return Err(NetError::new(
            NetCode::ImageTooLarge,
            format!("the image is larger than {max_bytes} bytes"),
        ));
    }
    if !bytes.starts_with(&PNG_SIGNATURE) {
        return Err(NetError::new(
            NetCode::InvalidImage,
            "the decoded bytes are not a PNG (no PNG signature)",
        ));
    }
    Ok(bytes)
}

/// `<agentDir>/artifacts/pi-codex-toolkit`.
pub fn artifacts_dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join("artifacts").join("pi-codex-toolkit")
}

/// Writes `bytes` to a new `<uuid>.png` under the artifacts dir, never overwriting; returns the absolute path.
pub fn write_exclusive(agent_dir: &Path, bytes: &[u8]) -> Result<PathBuf, NetError> {
    let fail = |what: &str, e: std::io::Error| NetError::new(NetCode::WriteFailed, format!("{what} ({e})"));
    let dir = artifacts_dir(agent_dir);
    std::fs::create_dir_all(&dir).map_err(|e| fail(&format!("cannot create {}", dir.display()), e))?;
    let path = dir.join(format!("{}.png", uuid::Uuid::new_v4()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| fail(&format!("cannot create {}", path.display()), e))?;
    if let Err(e) = f.write_all(bytes).and_then(|_| f.sync_all()) {
        drop(f);
        let _ = std::fs::remove_file(&path);
        return Err(fail(&format!("cannot write {}", path.display()), e));
    }
    Ok(path)
}

/// The whole answer path: decode, check, write. Returns the path and the canonical base64 of the bytes written.
pub fn save(body: &str, agent_dir: &Path, max_bytes: usize) -> Result<(PathBuf, String), NetError> {
    let bytes = decode_png(body, max_bytes)?;
    let path = write_exclusive(agent_dir, &bytes)?;
    Ok((path, base64::engine::general_purpose::STANDARD.encode(&bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png_body(extra: usize) -> String {
        let mut b = PNG_SIGNATURE.to_vec();
        b.extend(std::iter::repeat_n(7u8, extra));
        json!({"data": [{"b64_json": base64::engine::general_purpose::STANDARD.encode(&b)}]}).to_string()
    }

    #[test]
    fn request_body_defaults_and_validation() {
        assert_eq!(
            request_body(&json!({"prompt": "a cat"})).unwrap(),
            json!({"prompt": "a cat", "model": "gpt-image-2", "background": "auto", "quality": "auto", "size": "auto"})
        );
        let b = request_body(&json!({"prompt": "p", "size": "1024x1536", "quality": "high"})).unwrap();
        assert_eq!(
            (b["size"].as_str(), b["quality"].as_str()),
            (Some("1024x1536"), Some("high"))
        );
        for bad in [
            json!({}),
            json!({"prompt": ""}),
            json!({"prompt": "p", "quality": "ultra"}),
            json!({"prompt": "p", "size": "big"}),
            json!({"prompt": "p", "size": "0x10"}),
            json!({"prompt": "p", "size": "8193x10"}),
            json!({"prompt": "p", "background": "transparent"}),
            json!({"prompt": "x".repeat(MAX_PROMPT_CHARS + 1)}),
        ] {
            assert_eq!(request_body(&bad).unwrap_err().code, "invalid-arguments", "{bad}");
        }
        assert!(request_body(&json!({"prompt": "x".repeat(MAX_PROMPT_CHARS), "size": "8192x1"})).is_ok());
    }

    #[test]
    fn png_check_and_limit() {
        assert_eq!(decode_png(&png_body(10), 100).unwrap().len(), 18);
        let jpeg = json!({"data": [{"b64_json": base64::engine::general_purpose::STANDARD.encode([0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3, 4])}]});
        assert_eq!(decode_png(&jpeg.to_string(), 100).unwrap_err().code, "invalid-image");
        assert_eq!(decode_png(r#"{"data":[]}"#, 100).unwrap_err().code, "invalid-image");
        assert_eq!(
            decode_png(r#"{"data":[{"b64_json":"@@@"}]}"#, 100).unwrap_err().code,
            "invalid-image"
        );
        assert_eq!(decode_png("<html>", 100).unwrap_err().code, "invalid-json");
        // The limit at its boundary.
        assert!(decode_png(&png_body(92), 100).is_ok());
        assert_eq!(decode_png(&png_body(93), 100).unwrap_err().code, "image-too-large");
    }

    #[test]
    fn exclusive_write_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        let (p1, b64) = save(&png_body(4), dir.path(), 100).unwrap();
        let (p2, _) = save(&png_body(4), dir.path(), 100).unwrap();
        assert_ne!(p1, p2);
        assert!(p1.starts_with(dir.path().join("artifacts/pi-codex-toolkit")));
        assert_eq!(p1.extension().unwrap(), "png");
        assert_eq!(std::fs::read(&p1).unwrap().len(), 12);
        assert_eq!(base64::engine::general_purpose::STANDARD.decode(b64).unwrap().len(), 12);
        // A refused body writes nothing.
        let before = std::fs::read_dir(artifacts_dir(dir.path())).unwrap().count();
        assert!(save("{}", dir.path(), 100).is_err());
        assert_eq!(std::fs::read_dir(artifacts_dir(dir.path())).unwrap().count(), before);
        // An unwritable agent dir is write-failed.
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::write(ro.join("artifacts"), b"a file where the folder should be").unwrap();
        assert_eq!(save(&png_body(4), &ro, 100).unwrap_err().code, "write-failed");
    }
}

//! napi-build sets the linker flags a Node addon needs on each platform.
fn main() {
    napi_build::setup();
}

//! The link arguments a Node addon needs on each platform (napi-build's).
fn main() {
    napi_build::setup();
}

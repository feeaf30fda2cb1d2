//! Nothing: building this crate runs boring-sys's build script, which compiles BoringSSL.

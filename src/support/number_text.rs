//! A number as JavaScript writes it, for the errors' messages.

/// A JavaScript number as an error message shows it. In the browser JavaScript writes it
/// (`String(x)`: `Infinity`, `1e+21`, as the caller would), which also keeps Rust's float
/// formatting, a large share of the module, out of the wasm; natively Rust's `Display`.
pub fn number_text(x: f64) -> String {
    #[cfg(target_arch = "wasm32")]
    {
        js_sys::Number::from(x)
            .to_string_with_radix(10)
            .map(String::from)
            .unwrap_or_default()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        x.to_string()
    }
}

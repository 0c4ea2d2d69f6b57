//! Milliseconds from a monotonic clock: `performance.now()` in windows and workers alike,
//! `Instant` natively. For the pool's idle times and the wall time of timing calls.

#[cfg(target_arch = "wasm32")]
mod web {
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;

    #[wasm_bindgen]
    extern "C" {
        pub type Performance;
        #[wasm_bindgen(catch, method)]
        fn now(this: &Performance) -> Result<f64, JsValue>;
    }

    thread_local! {
        /// `globalThis.performance`, looked up once: every call reads the clock (the pool's
        /// idle times), and finding it by name each time showed in a decode-sized call's
        /// cost (docs/performance.md, "The call's own cost").
        static PERFORMANCE: Option<Performance> = js_sys::Reflect::get(&js_sys::global(), &"performance".into())
            .ok()
            .filter(|p| p.is_object())
            .map(|p| p.unchecked_into());
    }

    pub fn now_ms() -> f64 {
        PERFORMANCE.with(|p| p.as_ref().and_then(|p| p.now().ok()).unwrap_or(0.0))
    }
}

#[cfg(target_arch = "wasm32")]
pub use web::now_ms;

#[cfg(not(target_arch = "wasm32"))]
pub fn now_ms() -> f64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e3
}

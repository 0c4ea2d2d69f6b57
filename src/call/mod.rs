//! A call described without a backend: its arguments and where their numbers live, the
//! checks that turn them into a shape and a plan, the kernel a plan needs and the device's
//! limits it is checked against, its results, dtypes and the named errors. Nothing here
//! imports a driver: each backend implements what `call/` asks of it (an upload's
//! destination, a tensor's storage, an app buffer's handle).

pub mod checks;
pub mod device;
pub mod dtype;
pub mod error;
pub mod given;
pub mod host;
#[cfg(not(target_arch = "wasm32"))]
pub mod native_arrays;
pub mod numbers;
pub mod options;
pub mod plan;
pub mod results;
pub mod rotary;
pub mod shape;
pub mod tensor;

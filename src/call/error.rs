//! The errors a call can end in. Their names are part of the JavaScript contract: the
//! facade turns each into an `Error` whose `name` is [`Error::name`].

use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// No WebGPU in this browser, or no adapter.
    WebGpuUnavailable(String),
    /// The device could not be created, was lost, or ran out of memory: worth a retry.
    GpuDevice(String),
    /// A freed instance or tensor, or a call before `init()`: a bug in the caller, never
    /// worth a retry (which is why it is not `GpuDevice`).
    InvalidState(String),
    /// Lengths that do not fit `hidden`, a bad `hidden` or `eps`, a row too large.
    Shape(String),
    /// An argument of the wrong type.
    Type(String),
    /// JavaScript's `RangeError`, its own name for a failed allocation: the CPU backend's
    /// wasm memory cannot hold a call's or a tensor's arrays. Worth a retry once tensors are
    /// freed.
    Range(String),
}

impl Error {
    pub fn name(&self) -> &'static str {
        match self {
            Error::WebGpuUnavailable(_) => "WebGpuUnavailableError",
            Error::GpuDevice(_) => "GpuDeviceError",
            Error::InvalidState(_) => "InvalidStateError",
            Error::Shape(_) => "ShapeError",
            Error::Type(_) => "TypeError",
            Error::Range(_) => "RangeError",
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Error::WebGpuUnavailable(m)
            | Error::GpuDevice(m)
            | Error::InvalidState(m)
            | Error::Shape(m)
            | Error::Type(m)
            | Error::Range(m) => m,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.name(), self.message())
    }
}

impl std::error::Error for Error {}

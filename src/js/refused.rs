//! A call refused while its record is decoded, and the one place its message describes what
//! the call got. The decoders (`fields.rs`, `rotary_args.rs`, `args.rs`) say which field was
//! refused and what it should have held; [`word`] adds the value the call gave, last, once a
//! call is refused, so that reading a call never comes back to describe a value.

use crate::call::error::Error;
use crate::js::call_record::Call;
use crate::js::keys::CallKey;
use crate::js::value::{check_keys, describe};

/// Why a call's record was refused.
pub enum Refused {
    /// Worded already: a value checked (`call/`), or a message that names no value.
    Error(Error),
    /// A field of the wrong type: `key: expected …, got` what the call gave.
    Field(CallKey, String),
    /// The argument object itself: `args: expected …, got` what the call gave.
    Args(&'static str),
    /// An own key the table does not have: `check_keys` names it, against `known`.
    UnknownKey(&'static [&'static str]),
}

impl From<Error> for Refused {
    fn from(e: Error) -> Refused {
        Refused::Error(e)
    }
}

/// `key` refused for its type: it should have been `expected`.
pub fn field<T>(key: CallKey, expected: impl Into<String>) -> Result<T, Refused> {
    Err(Refused::Field(key, expected.into()))
}

/// The message of a refusal, with what the call gave where it names a value.
pub fn word(call: &Call, refused: Refused) -> Error {
    match refused {
        Refused::Error(e) => e,
        Refused::Field(key, expected) => Error::Type(format!(
            "{}: expected {expected}, got {}",
            key.name(),
            call.got(key)
        )),
        Refused::Args(expected) => Error::Type(format!(
            "args: expected {expected}, got {}",
            describe(call.args())
        )),
        Refused::UnknownKey(known) => check_keys(call.args(), "args", known)
            .err()
            .unwrap_or_else(|| Error::Type("args: expected known fields only".into())),
    }
}

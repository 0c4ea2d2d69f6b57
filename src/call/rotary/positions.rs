//! A rotary stage's positions: a start for consecutive tokens, one a token from the host, or
//! one a token in a buffer of the app's on the device; their checks against a call's rows,
//! and the position of a token.

use std::rc::Rc;

use crate::call::error::Error;
use crate::call::host::AppBuffer;
use crate::support::number_text::number_text;

/// Each token's position.
#[derive(Clone)]
pub enum Positions {
    /// Consecutive tokens from this one (decode: one token).
    From(u32),
    /// One a token (`positions`).
    Each(Rc<[u32]>),
    /// One a token, in a buffer of the app's on the device (a decode loop's counter kept on
    /// the GPU): its 32-bit words from offset 0, copied on the GPU into the stage's table
    /// ahead of the kernel, never read on the host.
    Buffer(AppBuffer),
}

impl PartialEq for Positions {
    fn eq(&self, other: &Positions) -> bool {
        match (self, other) {
            (Positions::From(a), Positions::From(b)) => a == b,
            (Positions::Each(a), Positions::Each(b)) => a == b,
            (Positions::Buffer(a), Positions::Buffer(b)) => {
                a.len == b.len && a.handle().same(b.handle())
            }
            _ => false,
        }
    }
}

impl std::fmt::Debug for Positions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Positions::From(p) => write!(f, "From({p})"),
            Positions::Each(p) => write!(f, "Each({p:?})"),
            Positions::Buffer(b) => write!(f, "Buffer({} words)", b.len),
        }
    }
}

impl Positions {
    /// Rows a token (`said`: the call's `heads`), checked against the positions.
    pub fn check_heads(&self, said: Option<usize>, rows: usize) -> Result<usize, Error> {
        if said == Some(0) {
            return Err(shape("heads: expected an integer >= 1, got 0".into()));
        }
        match self {
            Positions::From(start) => {
                let heads = said.unwrap_or(1);
                if !rows.is_multiple_of(heads) {
                    return Err(shape(format!(
                        "heads: expected a divisor of the rows ({rows}), got {heads}"
                    )));
                }
                let last = *start as u64 + (rows / heads) as u64;
                if rows > 0 && last - 1 > u32::MAX as u64 {
                    return Err(shape(format!(
                        "position: expected at most {} for {} tokens, got {start}",
                        u32::MAX as u64 + 1 - (rows / heads) as u64,
                        rows / heads
                    )));
                }
                Ok(heads)
            }
            Positions::Each(p) => {
                let tokens = p.len();
                let heads = match said {
                    Some(h) => h,
                    None if tokens > 0 && rows.is_multiple_of(tokens) => rows / tokens,
                    None if rows == 0 => 1,
                    None => {
                        return Err(shape(format!(
                            "positions: expected one a token, a length that divides the rows \
                             ({rows}), got {tokens}"
                        )))
                    }
                };
                if tokens.checked_mul(heads) != Some(rows) {
                    return Err(shape(format!(
                        "positions: expected length {} (the rows, {rows}, / heads, {heads}), got \
                         {tokens}",
                        number_text(rows as f64 / heads as f64)
                    )));
                }
                Ok(heads)
            }
            Positions::Buffer(b) => check_buffer(b, said, rows),
        }
    }

    /// The position of token `token` (of the call's, counted from its first).
    pub fn of_token(&self, token: usize) -> u32 {
        match self {
            Positions::From(start) => start + token as u32,
            Positions::Each(p) => p[token],
            // Never on the host: the CPU backend refuses such a stage by name.
            Positions::Buffer(_) => 0,
        }
    }
}

/// Rows a token where the positions are an app's buffer: given, since the buffer's size
/// does not tell the tokens (engines pool buffers larger than a call), and the buffer
/// holding a position for each token.
fn check_buffer(b: &AppBuffer, said: Option<usize>, rows: usize) -> Result<usize, Error> {
    let Some(heads) = said else {
        return Err(Error::Type(
            "heads: expected the rows a token with positions in a GPUBuffer (its size does \
             not tell the tokens), got undefined"
                .into(),
        ));
    };
    if !rows.is_multiple_of(heads) {
        return Err(shape(format!(
            "heads: expected a divisor of the rows ({rows}), got {heads}"
        )));
    }
    let tokens = rows / heads;
    if b.len < tokens {
        return Err(shape(format!(
            "positions: expected a GPUBuffer of at least {} bytes (a 32-bit position for \
             each of {tokens} tokens), got {}",
            tokens * 4,
            b.len * 4
        )));
    }
    Ok(heads)
}

fn shape(message: String) -> Error {
    Error::Shape(message)
}

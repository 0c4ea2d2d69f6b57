//! The common call made again: a call of tensors in place (an inference app's decode step,
//! `norm.run` or `norm.encode` with the same tensors token after token) finds the dispatch
//! made for the same call before, and records or submits it at once, as a bound call does
//! (`bound.rs`). Checking the arguments again and making the dispatch were most of such a
//! call's own cost (docs/performance.md, "The call's own cost").
//!
//! A dispatch is kept by its context and the call's record (`call_record.rs`): tensors by
//! handle, every other field by its value. The record names only live tensors, and a
//! handle is never given to two tensors, so a dispatch found is one made, checked, for this
//! very call on this very device; a freed tensor, a lost device and every other call are
//! decoded in full, with their messages. A call that makes its dispatch creates its WebGPU
//! objects as `encode` does.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use crate::backend::Engine;
use crate::call::device::ContextId;
use crate::call::error::Error;
use crate::call::shape::Outputs;
use crate::gpu::encode::{dispatch, Dispatch};
use crate::gpu::GpuContext;
use crate::js::args::parse_encode;
use crate::js::call_record::{Call, Status, What, KEYS};
use crate::js::keys::CallKey;
use crate::js::value::to_js;
use crate::support::fast_hash::FastMap;

/// Dispatches kept before the cache starts over: more than a deep model's norms a token (two
/// a layer, and deep models have many layers), so that a decode loop never misses. A lost or
/// freed device's dispatches are never found again and go with the next start.
const MAX_DISPATCHES: usize = 512;

/// A dispatch's context and its call's record.
type Key = (ContextId, CallBits);

thread_local! {
    static DISPATCHES: RefCell<FastMap<Key, Rc<Dispatch>>> = RefCell::new(FastMap::default());
    /// Calls served by a kept dispatch so far (`debugStats().keptDispatchCalls`).
    static USED: Cell<f64> = const { Cell::new(0.0) };
    /// Of those, calls that repeated the one before (`debugStats().repeatedCalls`).
    static REPEATS: Cell<f64> = const { Cell::new(0.0) };
    /// The dispatch of the call read last, by its sequence and context: a call that repeats
    /// it (a decode loop passing one argument object token after token) takes it without
    /// hashing its record.
    static LAST: RefCell<Option<(u64, ContextId, Rc<Dispatch>)>> = const { RefCell::new(None) };
}

/// How many calls a kept dispatch has served, in every instance.
pub fn used() -> f64 {
    USED.get()
}

/// How many of them repeated the call before, in every instance.
pub fn repeats() -> f64 {
    REPEATS.get()
}

/// `norm.run(call)` (or `runWithSum`) where the call is one of tensors in place on the live
/// device: submitted through its kept dispatch, resolving with `undefined`. Otherwise the
/// call is decoded in full: `Err` with what makes its dispatch once it has run, where it is
/// such a call ([`Missed`]).
pub fn run(engine: &Engine, call: &Call) -> Result<Promise, Option<Missed>> {
    let ctx = common_call(engine, call).ok_or(None)?;
    match found(&ctx, call) {
        Some(d) => Ok(d.submit().unwrap_or_else(|e| Promise::reject(&to_js(e)))),
        None => Err(Some(Missed { ctx })),
    }
}

/// A call of tensors in place on the live device, whose dispatch is not kept yet.
pub struct Missed {
    ctx: Rc<GpuContext>,
}

impl Missed {
    /// Makes and keeps `call`'s dispatch for the calls that follow (once it has been decoded
    /// in full and run, which creates its objects in the call's error scopes).
    pub fn keep(self, call: &Call) {
        made(&self.ctx, call);
    }
}

/// `norm.encode(encoder, call)` where the call is one of tensors in place on the live device
/// and `encoder` one of the runtime's: recorded with its kept dispatch. `None` for any other
/// call or encoder, which is decoded in full, with its messages.
pub fn encode(engine: &Engine, encoder: &JsValue, call: &Call) -> Option<Result<(), JsValue>> {
    let ctx = common_call(engine, call)?;
    let d = match found(&ctx, call) {
        Some(d) => d,
        None => made(&ctx, call)?,
    };
    match d.record_on_encoder(encoder) {
        Ok(true) => Some(Ok(())),
        Ok(false) => None,
        Err(e) => Some(Err(to_js(e))),
    }
}

/// The live device of a GPU instance, where `call` is one of tensors in place.
fn common_call(engine: &Engine, call: &Call) -> Option<Rc<GpuContext>> {
    let ctx = engine.gpu()?.live()?;
    let tensor_or_absent = |k| matches!(call.what(k), What::Tensor | What::Absent);
    // A getter of the call's may free a tensor it has already named: such a call is decoded
    // in full, which finds the freed tensor and says so.
    let common = call.status() == Status::Read
        && !call.freed_while_read()
        && call.what(CallKey::InPlace) == What::Yes
        && call.what(CallKey::Output) == What::Absent
        && call.what(CallKey::Sum) == What::Absent
        && CallKey::ARRAYS.iter().all(|&k| tensor_or_absent(k))
        // A record holds a table's length, not its numbers, and a rotary stage's positions
        // change from token to token under the same record: such a call is decoded afresh.
        && [CallKey::Positions, CallKey::Position]
            .iter()
            .all(|&k| call.what(k) == What::Absent);
    common.then_some(ctx)
}

fn key(ctx: &GpuContext, call: &Call) -> Key {
    (ctx.id(), CallBits::of(call))
}

/// A call's record as bits: which fields it has, and what each holds and its value's bits, in
/// the table's order, packed at the front (a call has a few of the table's fields), so that
/// hashing and comparing touch those alone.
#[derive(Clone, Copy)]
struct CallBits {
    present: u32,
    whats: [u8; KEYS],
    values: [u64; KEYS],
}

const _: () = assert!(KEYS <= 32, "a field a bit of CallBits::present");

impl CallBits {
    fn of(call: &Call) -> CallBits {
        let present = call.present();
        let mut bits = CallBits {
            present,
            whats: [0; KEYS],
            values: [0; KEYS],
        };
        let (mut left, mut n) = (present, 0);
        while left != 0 {
            let (what, value) = call.field_at(left.trailing_zeros() as usize);
            (bits.whats[n], bits.values[n]) = (what as u8, value);
            (left, n) = (left & (left - 1), n + 1);
        }
        bits
    }

    fn given(&self) -> (&[u8], &[u64]) {
        let n = self.present.count_ones() as usize;
        (&self.whats[..n], &self.values[..n])
    }
}

impl PartialEq for CallBits {
    fn eq(&self, other: &Self) -> bool {
        self.present == other.present && self.given() == other.given()
    }
}

impl Eq for CallBits {}

impl std::hash::Hash for CallBits {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.present.hash(state);
        self.given().hash(state);
    }
}

fn found(ctx: &GpuContext, call: &Call) -> Option<Rc<Dispatch>> {
    let d = match repeated(ctx, call) {
        Some(d) => d,
        None => DISPATCHES.with(|d| d.borrow().get(&key(ctx, call)).cloned())?,
    };
    remember(ctx, call, &d);
    USED.set(USED.get() + 1.0);
    Some(d)
}

/// The dispatch of the call before, where `call` repeats it on the same context.
fn repeated(ctx: &GpuContext, call: &Call) -> Option<Rc<Dispatch>> {
    if !call.repeats() {
        return None;
    }
    let d = LAST.with(|l| match &*l.borrow() {
        Some((seq, id, d)) if *seq == call.sequence() && *id == ctx.id() => Some(d.clone()),
        _ => None,
    })?;
    REPEATS.set(REPEATS.get() + 1.0);
    Some(d)
}

fn remember(ctx: &GpuContext, call: &Call, d: &Rc<Dispatch>) {
    LAST.with(|l| *l.borrow_mut() = Some((call.sequence(), ctx.id(), d.clone())));
}

/// The call's dispatch, made and kept; `None` where its checks refuse it (decoding it in full
/// then says why) or it has no rows.
fn made(ctx: &GpuContext, call: &Call) -> Option<Rc<Dispatch>> {
    let (x, _) = parse_encode(call).ok()?;
    let d: Result<_, Error> = ctx
        .browser_pipelines()
        .and_then(|mut r| dispatch(&mut r, ctx, &x, &Outputs::InPlace));
    let d = Rc::new(d.ok()??);
    DISPATCHES.with(|all| {
        let mut all = all.borrow_mut();
        if all.len() >= MAX_DISPATCHES {
            all.clear();
        }
        all.insert(key(ctx, call), d.clone());
    });
    remember(ctx, call, &d);
    Some(d)
}

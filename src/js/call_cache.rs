//! The common call made again: a plain object of tensors in place (an inference app's decode
//! step, `norm.run` or `norm.encode` with the same tensors token after token) finds the
//! dispatch made for the same tensors, `hidden` and `eps` before, and records or submits it
//! at once, as a bound call does (`bound.rs`). Reading and checking the arguments again was
//! most of such a call's own cost (docs/performance.md, "The call's own cost").
//!
//! A dispatch is kept by its context, its tensors' handles and its numbers. The one-step
//! reader (`tensor_call.rs`) takes only live tensors, and a handle is never given to two
//! tensors, so a dispatch found is one made, checked, for these very tensors on this very
//! device; a freed tensor, a lost device and every other call take the full path, with its
//! messages. A call that makes its dispatch creates its WebGPU objects as `encode` does.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use crate::backend::Engine;
use crate::call::device::ContextId;
use crate::call::error::Error;
use crate::call::plan::Request;
use crate::call::shape::Outputs;
use crate::gpu::encode::{dispatch, Dispatch};
use crate::gpu::GpuContext;
use crate::js::array::Args;
use crate::js::tensor::freed_count;
use crate::js::tensor_call::{parse_read, read, TensorCall};
use crate::js::value::to_js;
use crate::support::fast_hash::FastMap;

/// Dispatches kept before the cache starts over: more than a deep model's norms a token (two
/// a layer, eighty layers and more), so that a decode loop never misses. A lost or freed
/// device's dispatches are never found again and go with the next start.
const MAX_DISPATCHES: usize = 512;

/// A dispatch's context, its tensors' handles and its numbers (`TensorCall::numbers`).
type Key = (ContextId, [u32; 5], [u64; 3]);

thread_local! {
    static DISPATCHES: RefCell<FastMap<Key, Rc<Dispatch>>> = RefCell::new(FastMap::default());
}

/// `norm.run(args)` (or `runWithSum`) where `args` is the common call in place on the live
/// device: submitted through its kept dispatch, resolving with `undefined`. Otherwise the
/// call takes the full path: `Err` with the call as read, where it is the common call, to
/// parse without reading it again and keep its dispatch once it has run ([`Missed`]).
pub fn run(engine: &Engine, args: &JsValue) -> Result<Promise, Option<Missed>> {
    let (ctx, call) = common_call(engine, args).ok_or(None)?;
    match found(&ctx, &call) {
        Some(d) => Ok(d.submit().unwrap_or_else(|e| Promise::reject(&to_js(e)))),
        None => Err(Some(Missed { ctx, call })),
    }
}

/// The common call in place, read, whose dispatch is not kept yet.
pub struct Missed {
    ctx: Rc<GpuContext>,
    call: TensorCall,
}

impl Missed {
    /// The call's arguments, as `args::parse_args` reads them.
    pub fn parse(&self, sum: bool) -> Option<Result<(Args, Request), Error>> {
        parse_read(&self.call, sum)
    }

    /// Makes and keeps the call's dispatch for the calls that follow (once it has taken the
    /// full path, which creates its objects in the call's error scopes).
    pub fn keep(self) {
        made(&self.ctx, &self.call);
    }
}

/// `norm.encode(encoder, args)` where `args` is the common call in place on the live device
/// and `encoder` one of the runtime's: recorded with its kept dispatch. `None` for any other
/// call or encoder, which takes the full path and its messages.
pub fn encode(engine: &Engine, encoder: &JsValue, args: &JsValue) -> Option<Result<(), JsValue>> {
    let (ctx, call) = common_call(engine, args)?;
    let d = found(&ctx, &call).or_else(|| made(&ctx, &call))?;
    match d.record_on_encoder(encoder) {
        Ok(true) => Some(Ok(())),
        Ok(false) => None,
        Err(e) => Some(Err(to_js(e))),
    }
}

/// The live device of a GPU instance, and `args` read in one step where they are a call in
/// place.
fn common_call(engine: &Engine, args: &JsValue) -> Option<(Rc<GpuContext>, TensorCall)> {
    let ctx = engine.gpu()?.live()?;
    // A getter of the call's may free a tensor it has already named: such a call takes the
    // full path, which finds the freed tensor and says so.
    let freed = freed_count();
    let call = read(args)?;
    (call.in_place() && freed_count() == freed).then_some((ctx, call))
}

fn key(ctx: &GpuContext, call: &TensorCall) -> Key {
    (ctx.id(), call.handles(), call.numbers())
}

fn found(ctx: &GpuContext, call: &TensorCall) -> Option<Rc<Dispatch>> {
    DISPATCHES.with(|d| d.borrow().get(&key(ctx, call)).cloned())
}

/// The call's dispatch, made and kept; `None` where its checks refuse it (the full path then
/// says why) or it has no rows.
fn made(ctx: &GpuContext, call: &TensorCall) -> Option<Rc<Dispatch>> {
    let (x, _) = parse_read(call, false)?.ok()?;
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
    Some(d)
}

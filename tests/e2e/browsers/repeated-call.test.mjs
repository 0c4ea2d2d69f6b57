// A call that repeats the one read before it (an app passing one argument object step after
// step) takes that call's dispatch without hashing its record (call.js `repeats`,
// call_cache.rs `repeated`), in headless Chromium on WebGPU (SwiftShader): through run and
// encode, every step against the f64 reference (www/lib/reference.js), and never the
// dispatch of another call: the object changed in place, another call or a refused one in
// between, the same object on another instance.
//
//   bash scripts/build.sh && node --test --test-reporter=spec tests/e2e/browsers/repeated-call.test.mjs
import assert from "node:assert/strict";

import { pageSuite, test } from "../support/page.mjs";

const { inPage } = pageSuite("rmsnorm-repeated-call-");

test("one argument object step after step: each repeat is served by its call's dispatch and meets the f64 reference; changed in place, after another call, after a refusal and on another instance it is never served a dispatch of another call", async () => {
  const r = await inPage(async () => {
    const { pkg, ref, seeded } = window.lib;
    const [n, other] = await Promise.all([pkg.FusedRmsNorm.create(), pkg.FusedRmsNorm.create()]);
    const submit = window.lib.readings.submitter(n);
    const a = seeded.caseArgs({ rows: 3, hidden: 64, seed: 21 });
    const b = seeded.caseArgs({ rows: 3, hidden: 64, seed: 22 });
    const failures = [];
    const kept = () => n.debugStats().keptDispatchCalls;
    const repeated = () => n.debugStats().repeatedCalls;
    // What a call came to: encode throws, run rejects.
    const message = async (f) => (async () => f())().then(() => "resolved", (e) => `${e.name}: ${e.message}`);
    for (const [name, call] of [["run", (x) => n.run(x)], ["encode", (x) => submit((e) => n.encode(e, x))]]) {
      const args = { input: n.upload(a.input), residual: n.upload(a.residual), gamma: n.upload(a.gamma), hidden: a.hidden, eps: 1e-6, inPlace: true };
      // Each step from what the last left: the reference follows the tensors.
      const step = async (what, extra = { eps: 1e-6 }, served = true, repeat = served) => {
        const [x, v] = [await args.input.read(), await args.residual.read()];
        const [before, repeats] = [kept(), repeated()];
        await call(args);
        if (served !== (kept() > before)) failures.push(`${name} ${what}: served by a kept dispatch ${kept() > before}, expected ${served}`);
        // A repeat of the call just before: taken without looking it up.
        if (repeat !== (repeated() > repeats)) failures.push(`${name} ${what}: taken as a repeat ${repeated() > repeats}, expected ${repeat}`);
        const rep = ref.compare({ input: x, residual: v, gamma: a.gamma, hidden: a.hidden, ...extra }, await args.input.read(), { sum: await args.residual.read() });
        if (!rep.ok) failures.push(`${name} ${what}: ${rep.problems.join("; ")}`);
      };
      await step("first", undefined, false);
      await step("repeat 1");
      await step("repeat 2");
      // Changed in place: the object is the same, the call is not.
      args.eps = 0.25;
      await step("eps changed in place", { eps: 0.25 }, false);
      await step("eps 0.25 repeated", { eps: 0.25 });
      args.eps = 1e-6;
      await step("eps back", undefined, true, false);
      // Another call in between, then the first again.
      const t = { input: n.upload(b.input), residual: n.upload(b.residual), gamma: args.gamma, hidden: b.hidden, inPlace: true };
      await call(t);
      const rep = ref.compare({ ...b, gamma: a.gamma, eps: undefined }, await t.input.read(), { sum: await t.residual.read() });
      if (!rep.ok) failures.push(`${name} another call in between: ${rep.problems.join("; ")}`);
      await step("after another call", undefined, true, false);
      // A refused call, twice: the second repeats the first, and is refused too.
      const bad = { ...args, eps: -1 };
      const refusals = [await message(() => call(bad)), await message(() => call(bad))];
      const want = "ShapeError: eps: expected a finite number >= 0, got -1";
      if (refusals.some((m) => m !== want)) failures.push(`${name} a refused call repeated: ${refusals.join(" / ")}`);
      await step("after the refusals", undefined, true, false);
      // The same object on another instance: its tensors are not that instance's.
      const elsewhere = await message(() => (name === "run" ? other.run(args) : window.lib.readings.submitter(other)((e) => other.encode(e, args))));
      if (!/^(TypeError|InvalidStateError|GpuDeviceError): input: /.test(elsewhere)) failures.push(`${name} on another instance: ${elsewhere}`);
      await step("after another instance");
      // An empty object after a call that was not an object is not a repeat of it.
      const notObject = await message(() => call(null));
      const empty = await message(() => call({}));
      if (!notObject.startsWith("TypeError: args: ") || !empty.startsWith("TypeError: input: ")) failures.push(`${name} null then {}: ${notObject} / ${empty}`);
      // A tensor freed between two repeats.
      args.residual.free();
      const freed = await message(() => call(args));
      if (freed !== "InvalidStateError: residual: expected a live GpuTensor, got one that was freed") failures.push(`${name} a freed tensor: ${freed}`);
    }
    return failures;
  });
  assert.deepEqual(r, []);
});

// Where the consumer's lib has Float16Array (ESNext), the package takes one as f16 data and
// still resolves with Uint16Array bits. Compiled by tsconfig.esnext.json.
import { FusedRmsNorm, type GpuTensor } from "webgpu-rmsnorm";
import type { Equal, Expect } from "./exact";

export async function float16(norm: FusedRmsNorm): Promise<void> {
  const hidden = 4;
  const h = () => new Float16Array(hidden);
  const y = await norm.run({ input: h(), residual: h(), gamma: h(), hidden });
  const t = norm.upload(h());
  type _ = [Expect<Equal<typeof y, Uint16Array>>, Expect<Equal<typeof t, GpuTensor<"f16">>>];
  t.free();
  // Into the caller's Float16Arrays: resolves with them, typed as they are.
  const out = h();
  const into = await norm.run({ input: h(), gamma: h(), hidden, output: out });
  const both = await norm.runWithSum({ input: h(), residual: h(), gamma: h(), hidden, output: out, sum: h() });
  type _Into = [Expect<Equal<typeof into, typeof out>>, Expect<Equal<typeof both.output, typeof out>>, Expect<Equal<typeof both.sum, typeof out>>];
}

//! Settings that tests and benchmarks change to reach paths a device would not take.

use crate::gpu::GpuContext;

impl GpuContext {
    /// Uses packed u32 storage for f16 even where `shader-f16` is available (to test that
    /// path, or to work around a driver).
    pub fn set_shader_f16(&mut self, on: bool) {
        self.dev.caps.shader_f16 = on
            && self
                .dev
                .device
                .features()
                .contains(wgpu::Features::SHADER_F16);
    }

    /// Tiles kernels as for a CPU adapter in the browser, so native tests cover that tiling.
    pub fn set_cpu_tiling(&mut self, on: bool) {
        self.dev.caps.cpu_tiling = on;
    }

    /// Caps storage bindings below the device's limit, so tests can reach the row-splitting
    /// path and the row-too-large error without allocating gigabytes.
    pub fn set_binding_limit(&mut self, bytes: u64) {
        self.dev.caps.max_binding = self.dev.caps.max_binding.min(bytes.max(16));
    }

    /// Destroys the device, as a driver reset would; for tests of device loss.
    pub fn destroy_device(&self) {
        self.dev.destroy();
    }
}

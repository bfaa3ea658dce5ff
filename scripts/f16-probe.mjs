#!/usr/bin/env node
/**
 * Does this machine have a WebGPU adapter with shader-f16 under Dawn (the `webgpu` package)?
 * Prints the adapter and its features, then runs one kernel that reads f16 storage and checks its
 * result. For issue 17's F16 base weights, which SwiftShader (no shader-f16) cannot run:
 *
 *   echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/bpo.list
 *   apt-get update && apt-get install -y -t bookworm-backports mesa-vulkan-drivers
 *   node scripts/f16-probe.mjs /usr/share/vulkan/icd.d/lvp_icd.json
 *
 * Measured 2026-12-06 on the 2-core build machine: Mesa 25.0.7's llvmpipe (lavapipe) lists
 * shader-f16 and the kernel returns 4. The argument is a Vulkan ICD file (VK_ICD_FILENAMES);
 * without one the environment's is used. Exits 1 without an adapter or shader-f16, 2 on a wrong
 * result.
 */
if (process.argv[2]) process.env.VK_ICD_FILENAMES = process.argv[2];
const { create, globals } = await import('webgpu');
Object.assign(globalThis, globals);
const gpu = create([]); // kept referenced while the device lives
const adapter = await gpu.requestAdapter();
if (!adapter) {
  console.log('no WebGPU adapter');
  process.exit(1);
}
console.log('adapter:', adapter.info.vendor, adapter.info.architecture, adapter.info.description);
console.log('features:', [...adapter.features].sort().join(', '));
if (!adapter.features.has('shader-f16')) {
  console.log('no shader-f16');
  process.exit(1);
}
const device = await adapter.requestDevice({ requiredFeatures: ['shader-f16'] });
const module = device.createShaderModule({
  code: `enable f16;
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(1) fn main() { o[0] = f32(a[0]) * 2.0 + f32(a[1]); }`,
});
const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
const input = device.createBuffer({ size: 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
device.queue.writeBuffer(input, 0, new Uint16Array([0x3e00, 0x3c00])); // f16 1.5 and 1.0
const out = device.createBuffer({ size: 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
const read = device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
const bind = device.createBindGroup({
  layout: pipeline.getBindGroupLayout(0),
  entries: [
    { binding: 0, resource: { buffer: input } },
    { binding: 1, resource: { buffer: out } },
  ],
});
const enc = device.createCommandEncoder();
const pass = enc.beginComputePass();
pass.setPipeline(pipeline);
pass.setBindGroup(0, bind);
pass.dispatchWorkgroups(1);
pass.end();
enc.copyBufferToBuffer(out, 0, read, 0, 4);
device.queue.submit([enc.finish()]);
await read.mapAsync(GPUMapMode.READ);
const got = new Float32Array(read.getMappedRange())[0];
console.log(`f16 storage read: 1.5 * 2 + 1 = ${got}`);
process.exit(got === 4 ? 0 : 2);

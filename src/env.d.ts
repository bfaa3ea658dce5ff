/** WGSL files are imported as their source text (see the `wgsl` plugin in vite.config.ts and bin/coderl.mjs). */
declare module '*.wgsl' {
  const source: string;
  export default source;
}

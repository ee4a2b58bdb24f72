// prom-client's own files, imported one by one (./prom.ts says why). Typed there, from its index's types.
declare module 'prom-client/lib/registry.js' {
  const value: unknown;
  export default value;
}
declare module 'prom-client/lib/counter.js' {
  const value: unknown;
  export default value;
}
declare module 'prom-client/lib/gauge.js' {
  const value: unknown;
  export default value;
}
declare module 'prom-client/lib/histogram.js' {
  const value: unknown;
  export default value;
}
declare module 'prom-client/lib/metrics/processStartTime.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}
declare module 'prom-client/lib/metrics/osMemoryHeap.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}
declare module 'prom-client/lib/metrics/processOpenFileDescriptors.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}
declare module 'prom-client/lib/metrics/processMaxFileDescriptors.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}
declare module 'prom-client/lib/metrics/eventLoopLag.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}
declare module 'prom-client/lib/metrics/processResources.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}
declare module 'prom-client/lib/metrics/processHandles.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}
declare module 'prom-client/lib/metrics/processRequests.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}
declare module 'prom-client/lib/metrics/heapSizeAndUsed.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}
declare module 'prom-client/lib/metrics/heapSpacesSizeAndUsed.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}
declare module 'prom-client/lib/metrics/version.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}
declare module 'prom-client/lib/metrics/gc.js' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}

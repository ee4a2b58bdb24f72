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
declare module 'prom-client/lib/metrics/*' {
  const register: (registry: unknown, config: object) => void;
  export default register;
}

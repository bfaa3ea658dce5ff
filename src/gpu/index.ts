export * from './adapter';
export * from './errors';
export * from './kernel';
export * from './pool';
export * from './provider';
export * from './recorder';
export * from './runtime';
export * from './info';

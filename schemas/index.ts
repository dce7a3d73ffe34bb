export * from './error-codes.ts';
export * from './limits.ts';
export * from './topics.ts';
export * from './error-event.ts';
export * from './scopes.ts';
export * from './project-events.ts';
export * from './usage-month.ts';

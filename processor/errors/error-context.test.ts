import { describe } from 'vitest';
import { defineErrorContextScenarios } from './error-context.test-scenarios.ts';

describe('error context through the pipeline (embedded: PGlite, chDB, in-process bus)', () => {
  defineErrorContextScenarios();
});

import { describe } from 'vitest';
import { defineErrorPipelineScenarios } from './error-pipeline.test-scenarios.ts';

describe('error pipeline (embedded: PGlite, chDB, in-process bus)', () => {
  defineErrorPipelineScenarios();
});

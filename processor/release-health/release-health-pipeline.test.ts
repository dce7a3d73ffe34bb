import { describe } from 'vitest';
import { defineReleaseHealthScenarios } from './release-health-pipeline.test-scenarios.ts';

describe('release health pipeline (embedded: PGlite, chDB, in-process bus)', () => {
  defineReleaseHealthScenarios();
});

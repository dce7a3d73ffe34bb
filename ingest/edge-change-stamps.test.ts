import { createTestPlatform } from '../test/support/platform.ts';
import { defineEdgeChangeStampScenarios } from './edge-change-stamps.test-scenarios.ts';

defineEdgeChangeStampScenarios('edge caches at rest on the embedded default (PGlite)', (clock) =>
  createTestPlatform({ env: { SETTINGS_REFRESH_MS: '100' }, overrides: { clock } }),
);

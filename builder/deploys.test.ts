import { defineDeployScenarios } from './deploys.test-scenarios.ts';

// Embedded: PGlite, chDB, the in-process bus.
defineDeployScenarios();

import { defineDeployScenarios } from './deploys.scenarios.ts';

// Embedded: PGlite, chDB, the in-process bus.
defineDeployScenarios();

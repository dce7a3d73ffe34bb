import { z } from 'zod';
import { BranchSchema } from '../deploys.ts';
import { LIMITS } from '../limits.ts';
import { errorAnswers, NoContent, SlugIdParams, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/**
 * Build variables per environment (issue 42): `GET/POST /v1/projects/:slug/env`, `PATCH/DELETE .../env/:id`. A
 * variable applies to production builds, preview builds or both; a preview one may name a branch, and then wins over
 * the plain preview value in that branch's previews. Secret values are write-only (answered as `••••`) and masked in
 * build logs. Keys starting with `CX_` (and `VITE_CX_`) are the builder's system variables: reserved.
 */
const E = LIMITS.buildEnv;
export const ENV_TARGETS = ['production', 'preview'] as const;
export const EnvTargetSchema = z.enum(ENV_TARGETS);
export type EnvTarget = z.infer<typeof EnvTargetSchema>;
/** What the API answers for a secret's value. */
export const MASKED_VALUE = '••••';
/** Prefixes of the system variables the builder sets (builder/build-variables.ts): no project may set one. */
export const RESERVED_ENV_PREFIXES = ['CX_', 'VITE_CX_'] as const;

export const EnvKeySchema = z
  .string()
  .max(E.keyChars)
  .regex(/^[A-Z_][A-Z0-9_]*$/, 'must be upper case letters, digits and _, not starting with a digit')
  .refine((k) => !RESERVED_ENV_PREFIXES.some((p) => k.startsWith(p)), 'keys starting with CX_ or VITE_CX_ are reserved for system variables');
const TargetsSchema = z.array(EnvTargetSchema).min(1).max(2);

export const EnvVarSchema = z.object({
  id: z.string().describe('`env_...`'),
  key: z.string(),
  value: z.string().describe(`the value; \`${MASKED_VALUE}\` for a secret (write-only)`),
  secret: z.boolean().describe('write-only, masked in build logs'),
  target: z.array(EnvTargetSchema).describe('the environments whose builds get it'),
  branch: z.string().nullable().describe("a preview override: only this branch's preview builds get it, over the plain preview value"),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type EnvVar = z.infer<typeof EnvVarSchema>;
export const EnvVarList = z.object({ env: z.array(EnvVarSchema).describe('by key, then production first, then branch overrides') });
export type EnvVarList = z.infer<typeof EnvVarList>;
export const EnvVarAnswer = z.object({ env: EnvVarSchema });
export type EnvVarAnswer = z.infer<typeof EnvVarAnswer>;

export const CreateEnvVarBody = z
  .object({
    key: EnvKeySchema,
    value: z.string().max(E.valueBytes),
    secret: z.boolean().default(false),
    target: TargetsSchema.optional().describe('default: both; with `branch`, preview only'),
    branch: BranchSchema.optional().describe('preview builds of this branch only (target must be preview)'),
  })
  .strict();
export type CreateEnvVarBody = z.infer<typeof CreateEnvVarBody>;
export const UpdateEnvVarBody = z
  .object({
    value: z.string().max(E.valueBytes).optional(),
    secret: z.boolean().optional().describe('a secret stays one unless its value is replaced too'),
    target: TargetsSchema.optional(),
    branch: BranchSchema.nullable().optional().describe('null: every branch'),
  })
  .strict();
export type UpdateEnvVarBody = z.infer<typeof UpdateEnvVarBody>;

const tags = ['deploys'];

export const envRoutes = routeShapes({
  listEnvVars: {
    tags,
    summary: 'Build variables, with their environments (secret values masked)',
    params: SlugParams,
    response: { 200: EnvVarList },
  },
  createEnvVar: {
    tags,
    summary: 'Add a build variable for production, preview or both (optionally one branch’s previews)',
    description: `At most ${E.perProject} variables a project, keys of ${E.keyChars} characters, values of ${E.valueBytes} bytes, ${E.totalBytes} bytes together. One key may have one value per environment (and per preview branch): an overlapping one answers 409. Keys starting with CX_ are reserved (400).`,
    params: SlugParams,
    body: CreateEnvVarBody,
    response: { 201: EnvVarAnswer, ...errorAnswers(400, 409) },
  },
  updateEnvVar: {
    tags,
    summary: "Change a build variable's value, secrecy, environments or branch",
    params: SlugIdParams,
    body: UpdateEnvVarBody,
    response: { 200: EnvVarAnswer, ...errorAnswers(400, 404, 409) },
  },
  deleteEnvVar: {
    tags,
    summary: 'Remove a build variable',
    params: SlugIdParams,
    response: { 204: NoContent, ...errorAnswers(404) },
  },
});

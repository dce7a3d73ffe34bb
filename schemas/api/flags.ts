import { z } from 'zod';
import { FlagConditionSchema, FlagDefinitionSchema, FlagVariantSchema, type FlagDefinition } from '../flags.ts';

/** Feature flags (spec §4.7): the definitions a project manages; the edge evaluates them (schemas/flags.ts). */
export const FlagKeyParams = z.object({ slug: z.string(), key: z.string().max(100) });

export const FlagSchema = z.object({
  id: z.string(),
  key: z.string(),
  description: z.string(),
  enabled: z.boolean(),
  rolloutPercentage: z.number(),
  variants: z.array(FlagVariantSchema),
  payload: z.unknown().optional(),
  conditions: z.array(FlagConditionSchema),
  createdAt: z.string(),
  updatedAt: z.string(),
});
/** A flag as stored and answered: its definition, its id and when it was made and last changed. */
export type Flag = FlagDefinition & { id: string; createdAt: string; updatedAt: string };
export const FlagAnswer = z.object({ flag: FlagSchema });
export type FlagAnswer = z.infer<typeof FlagAnswer>;
export const FlagList = z.object({ data: z.array(FlagSchema) });
export type FlagList = z.infer<typeof FlagList>;
export const CreateFlagBody = FlagDefinitionSchema.strict();
export type CreateFlagBody = z.input<typeof CreateFlagBody>;

/**
 * A change names only the fields it changes. zod 4 applies a field's default even inside `.partial()`, which would
 * reset every unnamed field (rollout to 100, variants and conditions to none); the defaults are unwrapped first.
 */
export const PatchFlagBody = z
  .object(
    Object.fromEntries(
      Object.entries(FlagDefinitionSchema.omit({ key: true }).shape).map(([name, field]) => [
        name,
        (field instanceof z.ZodDefault ? (field.unwrap() as z.ZodType) : (field as z.ZodType)).optional(),
      ]),
    ) as { [K in keyof Omit<FlagDefinition, 'key'>]-?: z.ZodOptional<z.ZodType<Omit<FlagDefinition, 'key'>[K]>> },
  )
  .strict();
export type PatchFlagBody = z.infer<typeof PatchFlagBody>;
export const DeletedAnswer = z.object({ deleted: z.literal(true) });
export type DeletedAnswer = z.infer<typeof DeletedAnswer>;

import type { Readable } from 'node:stream';

/**
 * A prebuilt upload made a deploy (issue 42, "Deploy without git"): the API takes the request, the builder's code
 * (builder/prebuilt-deploy.ts) unpacks and finishes it as a build would, and the composition root (service/) hands that
 * function to the API, so neither role imports the other.
 */
export interface PrebuiltRequest {
  projectId: string;
  branch?: string;
  environment?: 'production' | 'preview';
  gitSha?: string;
  /** The user, or the project key, that uploaded it. */
  triggerId: string | null;
}

/** Unpack `body` (a .tar.gz) and make it a deploy; answers its id, or throws the ServiceError that refuses it. */
export type DeployPrebuilt = (body: Readable, req: PrebuiltRequest) => Promise<string>;

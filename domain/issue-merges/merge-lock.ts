/**
 * The per-project lock between a merge of issues (issue 41) and the error pipeline's redirect read: a transaction-scoped
 * advisory lock on this key, taken exclusive by the merge (api/errors/issue-merges-repository.ts) and shared by a batch
 * (processor/errors/repositories/merges-repository.ts) from its redirect read to its commit. A merge waits for the
 * batches in flight of its project; a batch that starts during a merge waits for it, then reads its redirects. Batches
 * never wait for each other on it.
 */
export const mergeLockKey = (projectId: string) => `error_group_merges:${projectId}`;

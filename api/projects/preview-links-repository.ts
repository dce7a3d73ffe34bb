import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId, newToken, tokenHash } from '../../platform/tokens.ts';

/**
 * Share links of a project's protected previews (issue 42): like a deploy log's share link, the token is shown once
 * and only its hash is kept; a link opens every per-deploy host of its project until it expires or is revoked
 * (hosting/serve/preview-gate.ts reads them through platform/sites/sites-repository.ts).
 */
export interface PreviewLinkRow {
  id: string;
  created_at: Date | string;
  expires_at: Date | string;
  revoked_at: Date | string | null;
}

export const PREVIEW_TOKEN_PREFIX = 'cxp_';

export const previewLinksRepository = {
  /** A new link and its token (shown once); undefined when the project already has `max` links that still open. */
  async create(
    db: Queryable,
    projectId: string,
    userId: string | null,
    days: number,
    max: number,
  ): Promise<{ row: PreviewLinkRow; token: string } | undefined> {
    const token = newToken(PREVIEW_TOKEN_PREFIX);
    const r = await db.query<PreviewLinkRow>(
      `INSERT INTO preview_links (id, project_id, token_hash, created_by, expires_at)
       SELECT $1, $2, $3, $4, now() + make_interval(days => $5)
        WHERE (SELECT count(*) FROM preview_links WHERE project_id = $2 AND revoked_at IS NULL AND expires_at > now()) < $6
       RETURNING id, created_at, expires_at, revoked_at`,
      [newId('pvl_'), projectId, tokenHash(token), userId, days, max],
    );
    return r.rows[0] && { row: r.rows[0], token };
  },

  /** The project's links, newest first (revoked and expired ones too, for the console's list), at most `limit`. */
  async list(db: Queryable, projectId: string, limit: number): Promise<PreviewLinkRow[]> {
    const r = await db.query<PreviewLinkRow>(
      'SELECT id, created_at, expires_at, revoked_at FROM preview_links WHERE project_id = $1 ORDER BY created_at DESC, id LIMIT $2',
      [projectId, limit],
    );
    return r.rows;
  },

  /** Revoke a link of this project; false when the project has no such link. */
  async revoke(db: Queryable, projectId: string, id: string): Promise<boolean> {
    const r = await db.query<{ id: string }>(
      'UPDATE preview_links SET revoked_at = COALESCE(revoked_at, now()) WHERE project_id = $1 AND id = $2 RETURNING id',
      [projectId, id],
    );
    return r.rows.length > 0;
  },
};

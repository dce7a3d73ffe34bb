import { randomBytes } from 'node:crypto';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { ProjectDomain } from '../../schemas/api/domains.ts';

/** Custom domains of a project and their proof of control (migration 0016). */
export const CHALLENGE_PREFIX = '_service-challenge';

interface Row {
  domain: string;
  serves: 'site' | 'status';
  token: string;
  created_at: Date | string;
  verified_at: Date | string | null;
}

const iso = (v: Date | string) => new Date(v).toISOString();
const toDomain = (r: Row): ProjectDomain => ({
  domain: r.domain,
  serves: r.serves,
  verified: r.verified_at !== null,
  verifiedAt: r.verified_at === null ? null : iso(r.verified_at),
  createdAt: iso(r.created_at),
  verification: { type: 'TXT', name: `${CHALLENGE_PREFIX}.${r.domain}`, value: r.token },
});

export const domainsRepository = {
  async list(db: Queryable, projectId: string): Promise<ProjectDomain[]> {
    const r = await db.query<Row>('SELECT domain, serves, token, created_at, verified_at FROM project_domains WHERE project_id = $1 ORDER BY domain', [
      projectId,
    ]);
    return r.rows.map(toDomain);
  },

  async get(db: Queryable, projectId: string, domain: string): Promise<ProjectDomain | undefined> {
    const r = await db.query<Row>('SELECT domain, serves, token, created_at, verified_at FROM project_domains WHERE project_id = $1 AND domain = $2', [
      projectId,
      domain,
    ]);
    return r.rows[0] && toDomain(r.rows[0]);
  },

  /** The project that serves the domain (verified), if any. */
  async verifiedOwner(db: Queryable, domain: string): Promise<string | undefined> {
    const r = await db.query<{ project_id: string }>('SELECT project_id FROM project_domains WHERE domain = $1 AND verified_at IS NOT NULL', [domain]);
    return r.rows[0]?.project_id;
  },

  /** A pending claim (or the existing one: adding twice changes only what it serves, migration 0047). */
  async claim(db: Queryable, projectId: string, domain: string, serves: 'site' | 'status' = 'site'): Promise<ProjectDomain> {
    const token = `service-verify=${randomBytes(16).toString('hex')}`;
    await db.query(
      'INSERT INTO project_domains (project_id, domain, token, serves) VALUES ($1, $2, $3, $4) ON CONFLICT (project_id, domain) DO UPDATE SET serves = EXCLUDED.serves',
      [projectId, domain, token, serves],
    );
    return (await this.get(db, projectId, domain))!;
  },

  /** Mark verified; false when another project verified it first (the unique index decides). */
  async markVerified(db: Queryable, projectId: string, domain: string, at: number): Promise<boolean> {
    try {
      await db.query('UPDATE project_domains SET verified_at = $3 WHERE project_id = $1 AND domain = $2 AND verified_at IS NULL', [
        projectId,
        domain,
        new Date(at),
      ]);
      // Other projects' pending claims of a domain that is now owned go away.
      await db.query('DELETE FROM project_domains WHERE domain = $1 AND project_id <> $2 AND verified_at IS NULL', [domain, projectId]);
      return true;
    } catch (err) {
      if ((err as { code?: string }).code === '23505') return false;
      throw err;
    }
  },

  async remove(db: Queryable, projectId: string, domain: string): Promise<boolean> {
    const r = await db.query('DELETE FROM project_domains WHERE project_id = $1 AND domain = $2 RETURNING domain', [projectId, domain]);
    return r.rows.length > 0;
  },
};

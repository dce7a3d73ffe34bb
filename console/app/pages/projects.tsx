import { ConnectedApps } from './oauth-consent.tsx';
import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { call, projectPath } from '../api.ts';
import { ErrorNote, Loaded, PageHead, Time, useAction, useResource } from '../ui.tsx';

/** GET /v1/projects and POST /v1/projects. */
export function Projects() {
  const r = useResource(() => call('listProjects'), []);
  const { route } = useLocation();
  const [name, setName] = useState('');
  const [slug, setSlug] = useState('');
  const act = useAction();
  const create = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const res = await call('createProject', { body: slug.trim() ? { name, slug: slug.trim() } : { name } });
      route(projectPath(res.project.slug));
    });
  };
  return (
    <div>
      <PageHead title="Projects" />
      <Loaded r={r} what="projects">
        {(d) =>
          d.projects.length === 0 ? (
            <p>No projects yet: create the first one below.</p>
          ) : (
            <ul class="cards">
              {d.projects.map((p) => (
                <li key={p.id}>
                  <a href={projectPath(p.slug)} class="card">
                    <strong>{p.name}</strong>
                    <span class="muted">
                      {p.slug} · created <Time iso={p.createdAt} />
                    </span>
                  </a>
                </li>
              ))}
            </ul>
          )
        }
      </Loaded>
      <section aria-labelledby="new-project">
        <h2 id="new-project">New project</h2>
        <form onSubmit={create} class="row-form">
          <label>
            Name
            <input name="name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </label>
          <label>
            Slug <span class="muted">(optional)</span>
            <input name="slug" maxLength={40} placeholder="from the name" value={slug} onInput={(e) => setSlug(e.currentTarget.value)} />
          </label>
          <button type="submit" disabled={act.busy}>
            Create project
          </button>
        </form>
        <ErrorNote error={act.error} />
      </section>
      <ConnectedApps />
    </div>
  );
}

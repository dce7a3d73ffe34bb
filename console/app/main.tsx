import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation, useRoute } from 'preact-iso';
import { ApiError, call, onSignedOut, projectPath } from './api.ts';
import { ErrorNote, Loading, useAction } from './ui.tsx';
import { SignIn } from './pages/sign-in.tsx';
import { DeviceApproval } from './pages/device.tsx';
import { Projects } from './pages/projects.tsx';
import { Overview } from './pages/overview.tsx';
import { Issues } from './pages/issues.tsx';
import { IssueDetail } from './pages/issue-detail.tsx';
import { Feedback } from './pages/feedback.tsx';
import { Settings } from './pages/settings.tsx';
import { AlertRules } from './pages/alert-rules.tsx';
import { Keys } from './pages/keys.tsx';
import { Webhooks, WebhookDetail } from './pages/webhooks.tsx';
import { Deploys, DeployDetail } from './pages/deploys.tsx';
import { Analytics } from './pages/analytics.tsx';
import { Flags } from './pages/flags.tsx';
import { Integrations } from './pages/integrations.tsx';
import { Uptime } from './pages/uptime.tsx';
import { OAuthConsent } from './pages/oauth-consent.tsx';
import './styles.css';
import type { User } from '../../schemas/api/accounts.ts';

/**
 * The console: an ordinary client of the public /v1 API (spec §1). The shell asks who is signed in
 * (GET /v1/auth/me); without a session every page shows the sign-in form in place, and returns to the same
 * page after signing in. Pages are one file each under pages/.
 */
function App() {
  const [user, setUser] = useState<User | null | undefined>(undefined);
  const [failure, setFailure] = useState<unknown>(null);
  const check = async () => {
    try {
      const me = await call('me');
      setUser(me.user);
      setFailure(null);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) setUser(null);
      else setFailure(err);
    }
  };
  // biome-ignore lint/correctness/useExhaustiveDependencies: once, when the shell mounts: who is signed in
  useEffect(() => {
    void check();
    return onSignedOut(() => setUser(null));
  }, []);

  if (failure && user === undefined) {
    return (
      <main class="narrow">
        <ErrorNote error={failure} />
        <button onClick={() => void check()}>Try again</button>
      </main>
    );
  }
  if (user === undefined) return <Loading what="the console" />;
  if (user === null) return <SignIn onSignedIn={(u) => setUser(u)} />;
  return <Shell user={user} onSignedOut={() => setUser(null)} />;
}

const SECTIONS: Array<[string, string]> = [
  ['', 'Overview'],
  ['/errors', 'Issues'],
  ['/feedback', 'Feedback'],
  ['/deploys', 'Deploys'],
  ['/analytics', 'Analytics'],
  ['/uptime', 'Uptime'],
  ['/flags', 'Flags'],
  ['/webhooks', 'Webhooks'],
  ['/integrations', 'Integrations'],
  ['/keys', 'Keys'],
  ['/settings', 'Settings'],
];

function ProjectNav() {
  const { path } = useLocation();
  const m = /^\/projects\/([^/]+)(\/[^/]+)?/.exec(path);
  if (!m) return null;
  const slug = decodeURIComponent(m[1]!);
  const section = m[2] ?? '';
  return (
    <nav class="project-nav" aria-label="Project">
      <a href="/projects" class="project-name" title="All projects">
        {slug}
      </a>
      {SECTIONS.map(([rest, label]) => (
        <a key={rest} href={projectPath(slug, rest)} aria-current={section === rest ? 'page' : undefined}>
          {label}
        </a>
      ))}
    </nav>
  );
}

function Shell({ user, onSignedOut: signedOut }: { user: User; onSignedOut: () => void }) {
  const out = useAction();
  const signOut = () =>
    out.run(async () => {
      await call('signOut');
      signedOut();
    });
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a href="/projects" class="brand">
          Console
        </a>
        <ProjectNav />
        <div class="who">
          <span class="muted">{user.email}</span>
          <button type="button" class="secondary small" onClick={signOut} disabled={out.busy}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <ErrorNote error={out.error} />
        <Router>
          <Route path="/" component={Home} />
          <Route path="/sign-in" component={Home} />
          <Route path="/cli/device" component={DeviceApproval} />
          <Route path="/oauth/authorize" component={OAuthConsent} />
          <Route path="/projects" component={Projects} />
          <Route path="/projects/:slug" component={Overview} />
          <Route path="/projects/:slug/errors" component={Issues} />
          <Route path="/projects/:slug/errors/:groupId" component={IssueDetail} />
          <Route path="/projects/:slug/feedback" component={Feedback} />
          <Route path="/projects/:slug/settings" component={Settings} />
          <Route path="/projects/:slug/alerts" component={AlertRules} />
          <Route path="/projects/:slug/keys" component={Keys} />
          <Route path="/projects/:slug/webhooks" component={Webhooks} />
          <Route path="/projects/:slug/webhooks/:id" component={WebhookDetail} />
          <Route path="/projects/:slug/deploys" component={Deploys} />
          <Route path="/projects/:slug/deploys/:deployId" component={DeployDetail} />
          <Route path="/projects/:slug/analytics" component={Analytics} />
          <Route path="/projects/:slug/flags" component={Flags} />
          <Route path="/projects/:slug/integrations" component={Integrations} />
          <Route path="/projects/:slug/uptime" component={Uptime} />
          <Route default component={NotFound} />
        </Router>
      </main>
    </>
  );
}

function Home() {
  const { route, query } = useLocation();
  // biome-ignore lint/correctness/useExhaustiveDependencies: once: the sign-in page sends a signed-in visitor on
  useEffect(() => route(query.next && query.next.startsWith('/') && !query.next.startsWith('//') ? query.next : '/projects', true), []);
  return null;
}

function NotFound() {
  const { path } = useRoute();
  return (
    <div>
      <h1>Not found</h1>
      <p>
        There is no console page at <code>{path}</code>. <a href="/projects">Go to your projects</a>.
      </p>
    </div>
  );
}

render(
  <LocationProvider>
    <App />
  </LocationProvider>,
  document.getElementById('app')!,
);

import { useState } from 'preact/hooks';
import { call } from '../api.ts';
import { ErrorNote, useAction } from '../ui.tsx';
import type { User } from '../../../schemas/api/accounts.ts';

/** POST /v1/auth/sign-in sets the session cookie; the page the person asked for then renders. */
export function SignIn({ onSignedIn }: { onSignedIn: (user: User) => void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const act = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const r = await call('signIn', { body: { email, password } });
      onSignedIn(r.user);
    });
  };
  return (
    <main class="narrow sign-in" id="main">
      <h1>Sign in to the console</h1>
      <form onSubmit={submit} class="stack">
        <label>
          Email
          <input type="email" name="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </label>
        <label>
          Password
          <input
            type="password"
            name="password"
            autoComplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </label>
        <ErrorNote error={act.error} />
        <button type="submit" disabled={act.busy}>
          {act.busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p class="muted">The first start of the service prints the owner's email and password.</p>
    </main>
  );
}

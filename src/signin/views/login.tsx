// The sign-in page. Field names, the button text and `next` are fixed by the operator contract.
import { escapeHtml } from '@kitajs/html'
import { CsrfField } from '../../web/components'
import { Layout } from '../../web/layout'

export interface LoginPageProps {
  next: string
  csrf: string
  email?: string
  error?: string
  /** Sign-in through the configured OpenID Connect provider, when there is one. */
  external?: { label: string; href: string }
}

export function LoginPage({ next, csrf, email, error, external }: LoginPageProps): JSX.Element {
  return (
    <Layout title="Sign in">
      <section class="card" aria-labelledby="login-title">
        <h1 id="login-title">Sign in to Threadhouse</h1>
        {error ? (
          <p class="alert" role="alert" safe>
            {error}
          </p>
        ) : null}
        <form method="post" action="/login">
          <CsrfField token={csrf} />
          <input type="hidden" name="next" value={escapeHtml(next)} />
          <div class="field">
            <label for="email">Email</label>
            <input
              id="email"
              name="email"
              type="email"
              autocomplete="username"
              required
              value={escapeHtml(email ?? '')}
            />
          </div>
          <div class="field">
            <label for="password">Password</label>
            <input id="password" name="password" type="password" autocomplete="current-password" required />
          </div>
          <div class="actions">
            <button type="submit" class="primary">
              Sign in
            </button>
          </div>
        </form>
        {external ? (
          <div class="external-signin">
            <p class="or">or</p>
            <a class="button" href={escapeHtml(external.href)} safe>
              {`Sign in with ${external.label}`}
            </a>
          </div>
        ) : null}
      </section>
    </Layout>
  )
}

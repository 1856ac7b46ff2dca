// The pages of the authorization endpoint: consent, and its failures (the request that cannot be answered where
// there is nowhere safe to redirect, the client of another organization) as errors the shared error page renders
// (src/web/errors.tsx). Plain data in, JSX or an error out; index.ts decides which one a request gets.
import { PageError } from '../web/errors'
import type { PageSession } from '../web/index'
import { viewerOf } from '../web/layout'
import { grantableScopes, organizationMayUse, type ValidAuthorizationRequest } from './authorization'
import { isLoopbackRedirect, isVerified } from './clients'
import type { Client } from './clients.repository'
import type { OAuthError } from './errors'
import { scopeDescriptions } from './model'
import { ConsentPage } from './views/consent'

/** How the consent page names where the browser goes next. */
function describeRedirect(redirectUri: string): string {
  const url = new URL(redirectUri)
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `${url.protocol} (an app on this device)`
  return isLoopbackRedirect(redirectUri) ? `${url.host} (an app on this computer)` : url.host
}

function clientLinks(client: Client): { label: string; href: string }[] {
  const links = [
    { label: 'Website', href: client.clientUri },
    { label: 'Privacy policy', href: client.policyUri },
    { label: 'Terms of service', href: client.tosUri },
  ]
  return links.filter((link): link is { label: string; href: string } => link.href !== null)
}

/** A request Threadhouse cannot accept and cannot safely send back: the error page, with the OAuth error for developers. */
export function unacceptableRequest(error: OAuthError): PageError {
  return new PageError(
    400,
    'This sign-in request cannot be completed',
    "The app that sent you here made a request Threadhouse cannot accept, so you have not been sent back to it. Contact the app's developer if this keeps happening.",
    { detail: `${error.error}: ${error.description}`, code: error.error },
  )
}

/** A client another organization claimed: refused, with the way back to the app carrying `access_denied`. */
export function otherOrganization(returnTo: string, request: ValidAuthorizationRequest): PageError {
  return new PageError(
    403,
    'This app belongs to another organization',
    `"${request.client.name}" was approved by another organization and can only be used there. Ask its developer to register it again for your organization, or ask an administrator for a registration token.`,
    { action: { href: returnTo, label: `Return to ${request.client.name}` }, code: 'access_denied' },
  )
}

export function consentPage(request: ValidAuthorizationRequest, session: PageSession, action: string): JSX.Element {
  const { client } = request
  const grantable = grantableScopes(request.scopes, session.user)
  return (
    <ConsentPage
      viewer={viewerOf(session)}
      action={action}
      csrf={session.csrf}
      clientName={client.name}
      verified={isVerified(client)}
      logoUri={client.logoUri}
      links={clientLinks(client)}
      redirectTarget={describeRedirect(request.redirectUri)}
      scopes={request.scopes.map((scope) => ({
        scope,
        description: grantable.includes(scope)
          ? scopeDescriptions[scope]
          : `${scopeDescriptions[scope]}. Not granted: only owners and admins of your organization may give it.`,
      }))}
      claimsForOrganization={
        organizationMayUse(client, session.user) === 'unclaimed' ? session.user.organizationSlug : null
      }
    />
  )
}

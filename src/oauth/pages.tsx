// The pages of the authorization endpoint: consent, the error page shown when there is nowhere safe to
// redirect, and the refusals. Plain data in, JSX out; index.ts decides which one a request gets.
import type { PageSession } from '../web/index'
import { viewerOf } from '../web/layout'
import { ConsentPage } from '../web/pages/consent'
import { MessagePage } from '../web/pages/message'
import { organizationMayUse, type ValidAuthorizationRequest } from './authorization'
import { isLoopbackRedirect, isVerified } from './clients'
import type { Client } from './clients.repository'
import type { OAuthError } from './errors'
import { scopeDescriptions } from './model'

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

export function errorPage(error: OAuthError, session: PageSession | null): JSX.Element {
  return (
    <MessagePage
      title="This sign-in request cannot be completed"
      message="The app that sent you here made a request Threadhouse cannot accept, so you have not been sent back to it. Contact the app's developer if this keeps happening."
      detail={`${error.error}: ${error.description}`}
      viewer={session ? viewerOf(session) : undefined}
    />
  )
}

export function refusalPage(returnTo: string, request: ValidAuthorizationRequest, session: PageSession): JSX.Element {
  return (
    <MessagePage
      title="This app belongs to another organization"
      message={`"${request.client.name}" was approved by another organization and can only be used there. Ask its developer to register it again for your organization, or ask an administrator for a registration token.`}
      viewer={viewerOf(session)}
      action={{ href: returnTo, label: `Return to ${request.client.name}` }}
    />
  )
}

export function consentPage(request: ValidAuthorizationRequest, session: PageSession, action: string): JSX.Element {
  const { client } = request
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
      scopes={request.scopes.map((scope) => ({ scope, description: scopeDescriptions[scope] }))}
      claimsForOrganization={
        organizationMayUse(client, session.user) === 'unclaimed' ? session.user.organizationSlug : null
      }
    />
  )
}

// The frame of every settings and administration page: the shared layout, the area's heading and its tabs.
import type { PropsWithChildren } from '@kitajs/html'
import { type NavItem, SectionNav } from './components'
import { Layout, type Viewer } from './layout'

export const settingsSections: NavItem[] = [
  { href: '/settings/tokens', label: 'API tokens' },
  { href: '/settings/apps', label: 'Connected apps' },
  { href: '/settings/clients', label: 'OAuth clients' },
  { href: '/settings/registration-token', label: 'Registration token' },
  { href: '/settings/shares', label: 'Share links' },
  { href: '/settings/password', label: 'Password' },
  { href: '/settings/usage', label: 'Usage' },
]

export const adminSections: NavItem[] = [
  { href: '/admin/clients', label: 'OAuth clients' },
  { href: '/admin/members', label: 'Members' },
  { href: '/admin/registration-token', label: 'Registration token' },
  { href: '/admin/webhooks', label: 'Webhooks' },
  { href: '/admin/mcp-servers', label: 'MCP servers' },
  { href: '/admin/retention', label: 'Retention' },
  { href: '/admin/models', label: 'Models' },
  { href: '/admin/usage', label: 'Usage' },
  { href: '/admin/quotas', label: 'Usage limits' },
  { href: '/admin/shares', label: 'Sharing' },
  { href: '/admin/audit', label: 'Audit' },
]

export interface FrameProps {
  viewer: Viewer
  /** The tab this page belongs to. */
  current: string
  /** The page's own name, for the document title. */
  title: string
}

function Frame(props: PropsWithChildren<FrameProps & { area: string; sections: NavItem[] }>): JSX.Element {
  return (
    <Layout title={`${props.title} · ${props.area}`} viewer={props.viewer}>
      <div class="page-wide">
        <h1 safe>{props.area}</h1>
        <SectionNav label={props.area} items={props.sections} current={props.current} />
        {props.children}
      </div>
    </Layout>
  )
}

export function SettingsFrame(props: PropsWithChildren<FrameProps>): JSX.Element {
  return (
    <Frame {...props} area="Settings" sections={settingsSections}>
      {props.children}
    </Frame>
  )
}

export function AdminFrame(props: PropsWithChildren<FrameProps>): JSX.Element {
  return (
    <Frame {...props} area="Administration" sections={adminSections}>
      {props.children}
    </Frame>
  )
}

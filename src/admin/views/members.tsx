// Administration → Members: add someone with a one-time password (shown once), change roles, and remove
// people after a confirmation step.
import { escapeHtml } from '@kitajs/html'
import { type Member, mayGrant, mayManage } from '../../auth/members'
import { type Role, roles } from '../../auth/model'
import { CsrfField, ErrorAlert, Notice, OneTimeSecret, TableRegion, Time } from '../../web/components'
import { AdminFrame } from '../../web/frame'
import type { Viewer } from '../../web/layout'

export function memberPath(sub: string): string {
  return `/admin/members/${encodeURIComponent(sub)}`
}

export const roleLabels: Record<Role, string> = { owner: 'Owner', admin: 'Admin', member: 'Member' }

/** The roles this person may hand out: only owners make owners. */
export function assignableRoles(actorRole: Role): Role[] {
  return roles.filter((role) => mayGrant(actorRole, role))
}

export interface MemberFormValues {
  email: string
  name: string
  role: Role
}

export interface MembersPageProps {
  viewer: Viewer
  /** The signed-in owner or admin. */
  actor: { id: number; role: Role }
  members: Member[]
  signInUrl: string
  notice?: string | null
  error?: string | null
  form?: MemberFormValues
  added?: { member: Member; oneTimePassword: string } | null
}

function memberLabel(member: Pick<Member, 'name' | 'email'>): string {
  return member.name ? `${member.name} (${member.email})` : member.email
}

function RoleOptions({ choices, selected }: { choices: Role[]; selected: Role }): JSX.Element {
  return (
    <>
      {choices.map((role) => (
        <option value={role} selected={role === selected} safe>
          {roleLabels[role]}
        </option>
      ))}
    </>
  )
}

function AddMemberForm({ viewer, actorRole, form }: { viewer: Viewer; actorRole: Role; form: MemberFormValues }) {
  return (
    <form method="post" action="/admin/members" class="card stack">
      <CsrfField token={viewer.csrf} />
      <h2>Add a member</h2>
      <p class="muted">They get a one-time password, shown once here, and must choose their own at first sign-in.</p>
      <div class="field">
        <label for="member-email">Email</label>
        <input id="member-email" name="email" type="email" required value={escapeHtml(form.email)} />
      </div>
      <div class="field">
        <label for="member-name">Name (optional)</label>
        <input id="member-name" name="name" type="text" maxlength="100" value={escapeHtml(form.name)} />
      </div>
      <div class="field">
        <label for="member-role">Role</label>
        <select id="member-role" name="role">
          <RoleOptions choices={assignableRoles(actorRole)} selected={form.role} />
        </select>
      </div>
      <div class="actions">
        <button type="submit" class="primary">
          Add member
        </button>
      </div>
    </form>
  )
}

function MemberRow({ viewer, actor, member }: { viewer: Viewer; actor: MembersPageProps['actor']; member: Member }) {
  const label = memberLabel(member)
  const selectId = `role-${member.sub}`
  return (
    <tr>
      <th scope="row">
        <span safe>{member.name ?? '—'}</span>
        {member.id === actor.id ? <span class="badge subtle">You</span> : null}
      </th>
      <td safe>{member.email}</td>
      <td>
        {mayManage(actor.role, member.role) ? (
          <form method="post" action={escapeHtml(`${memberPath(member.sub)}/role`)} class="inline">
            <CsrfField token={viewer.csrf} />
            <label for={escapeHtml(selectId)} class="visually-hidden" safe>
              {`Role of ${label}`}
            </label>
            <select id={escapeHtml(selectId)} name="role">
              <RoleOptions choices={assignableRoles(actor.role)} selected={member.role} />
            </select>{' '}
            <button type="submit" aria-label={escapeHtml(`Change role of ${label}`)}>
              Change
            </button>
          </form>
        ) : (
          <span safe>{roleLabels[member.role]}</span>
        )}
      </td>
      <td>{member.mustChangePassword ? <span class="badge">One-time password</span> : 'Active'}</td>
      <td>
        <Time at={member.createdAt} />
      </td>
      <td>
        {member.id !== actor.id && mayManage(actor.role, member.role) ? (
          <a href={escapeHtml(`${memberPath(member.sub)}/remove`)} aria-label={escapeHtml(`Remove ${label}`)}>
            Remove…
          </a>
        ) : null}
      </td>
    </tr>
  )
}

export function MembersPage(props: MembersPageProps): JSX.Element {
  return (
    <AdminFrame viewer={props.viewer} current="/admin/members" title="Members">
      <section aria-labelledby="members-title">
        <h2 id="members-title" class="visually-hidden">
          Members
        </h2>
        <Notice text={props.notice ?? null} />
        {props.added ? (
          <OneTimeSecret
            id="one-time-password"
            title={`One-time password for ${memberLabel(props.added.member)}`}
            value={props.added.oneTimePassword}
          >
            <p>
              Give it to them with the sign-in address <code safe>{props.signInUrl}</code>. They must choose their own
              password when they first sign in.
            </p>
          </OneTimeSecret>
        ) : null}
        <ErrorAlert text={props.error} />
        <AddMemberForm
          viewer={props.viewer}
          actorRole={props.actor.role}
          form={props.form ?? { email: '', name: '', role: 'member' }}
        />
        <h2>Members of your organization</h2>
        <TableRegion label="Members">
          <table>
            <caption class="visually-hidden">Members of your organization</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Status</th>
                <th scope="col">Added</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {props.members.map((member) => (
                <MemberRow viewer={props.viewer} actor={props.actor} member={member} />
              ))}
            </tbody>
          </table>
        </TableRegion>
      </section>
    </AdminFrame>
  )
}

export function RemoveMemberPage({ viewer, member }: { viewer: Viewer; member: Member }): JSX.Element {
  const label = memberLabel(member)
  return (
    <AdminFrame viewer={viewer} current="/admin/members" title={`Remove ${label}`}>
      <section aria-labelledby="remove-title" class="card">
        <h2 id="remove-title">
          Remove <span safe>{label}</span>?
        </h2>
        <p>They are signed out at once, and every API token and connected app they had stops working.</p>
        <p>
          Their threads stay: public ones remain readable by the organization under their name, private ones stay
          private, and nobody can add to them. Adding the same email again later restores the account and its threads.
        </p>
        <form method="post" action={escapeHtml(`${memberPath(member.sub)}/remove`)}>
          <CsrfField token={viewer.csrf} />
          <div class="actions">
            <a class="button" href="/admin/members">
              Cancel
            </a>
            <button type="submit" class="danger-solid">
              Remove member
            </button>
          </div>
        </form>
      </section>
    </AdminFrame>
  )
}

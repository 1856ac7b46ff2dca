// The new conversation (`/`, and `/threads` with the sidebar's search and filters): a greeting, what answers, and
// the composer, whose first message starts a thread (named after it unless a name is given).
import { escapeHtml } from '@kitajs/html'
import { ChatLayout, type ChatLayoutProps, TopBar } from './chat-layout'
import { Composer, type ModelPicker, type QuotaNotice } from './composer'
import { EchoNotice } from './parts'

export interface NewThreadDraft {
  name: string
  text: string
  isPrivate: boolean
}

export interface NewConversationPageProps extends Omit<ChatLayoutProps, 'title'> {
  /** Why the last start was refused, with what was typed. */
  error?: string
  draft?: NewThreadDraft
  /** The new thread's model; null when there is nothing to choose (one model). */
  picker: ModelPicker | null
  /** What the composer says of the person's monthly budgets. */
  quota?: QuotaNotice | null
}

export function NewConversationPage(props: NewConversationPageProps): JSX.Element {
  const { draft } = props
  return (
    <ChatLayout
      title="New thread"
      viewer={props.viewer}
      sidebar={props.sidebar}
      assets={props.assets}
      model={props.model}
    >
      <TopBar>
        <h1 class="chat-title">New thread</h1>
      </TopBar>
      <div id="thread-view" class="conversation conversation-new" data-state="new">
        <div class="welcome">
          <p class="welcome-title">What can I help with?</p>
          <EchoNotice model={props.model} isAdmin={props.viewer.isAdmin} />
        </div>
        <ol class="messages" aria-label="Messages" />
      </div>
      <Composer
        action="/threads"
        csrf={props.viewer.csrf}
        draft={draft?.text}
        error={props.error}
        quota={props.quota}
        placeholder="Message Threadhouse"
        picker={props.picker}
      >
        <details class="composer-options">
          <summary>Options</summary>
          <div class="options-panel">
            <div class="field">
              <label for="new-name">
                Name <span class="muted">(optional)</span>
              </label>
              <input
                id="new-name"
                name="name"
                type="text"
                maxlength="500"
                aria-describedby="new-name-hint"
                value={escapeHtml(draft?.name ?? '')}
              />
              <p id="new-name-hint" class="hint">
                Without one, the thread is named after the start of your message.
              </p>
            </div>
            <div class="check">
              <input
                id="new-private"
                name="is_private"
                type="checkbox"
                value="true"
                checked={draft?.isPrivate ?? false}
              />
              <label for="new-private">Private: only you can see it</label>
            </div>
          </div>
        </details>
      </Composer>
    </ChatLayout>
  )
}

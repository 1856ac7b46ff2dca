// The composer at the bottom of the chat, for a new thread and for a reply: a form that posts as it is (the
// `text` field and the `attachments` file input are the contract scripts drive), which the browser script turns
// into Enter-to-send, removable file chips, drag-and-drop and paste, and a send that does not reload the page.
import { escapeHtml, type PropsWithChildren } from '@kitajs/html'
import { filesPerRequest, imageLimits, pdfLimits, textLimits } from '../../attachments/limits'
import { CsrfField } from '../../web/components'
import { PaperclipIcon, SendIcon, StopIcon } from './chat-layout'
import { acceptedFiles, filesHint, Icon } from './parts'

/** The composer's model picker: the models on offer, the one chosen, and a note when a removed one fell back. */
export interface ModelPicker {
  options: { id: string; name: string }[]
  selected: string
  /** Said beside it when the thread's own choice is no longer available and the default answers instead. */
  note?: string
}

/** A tool of the organization's MCP servers in the Tools menu. */
export interface ToolOption {
  /** As thread settings name it: `server/tool`. */
  id: string
  server: string
  name: string
  title: string | null
  description: string
  /** Whether a call waits for the owner's choice (a tool that may change something, on a server not trusted). */
  asksFirst: boolean
}

/** The composer's Tools menu: the tools the organization has on, and the thread's choice among them. */
export interface ToolsMenu {
  offered: ToolOption[]
  /** null: every tool the organization has on (those turned on later too); []: none; else these `server/tool`. */
  chosen: string[] | null
}

/** What the composer says of the person's monthly budgets (src/quotas/): a refusal once one is used up, else a notice. */
export interface QuotaNotice {
  refused: boolean
  text: string
}

export interface ComposerProps {
  action: string
  csrf: string
  /** What was typed, when the last send was refused. */
  draft?: string
  /** Why the last send was refused. */
  error?: string
  /** From 80% of a monthly budget: which one, and when it resets; once used up, the refusal with the date. */
  quota?: QuotaNotice | null
  /** Where Stop posts; present while an answer is being written. */
  stopAction?: string
  running?: boolean
  placeholder: string
  /** The model the next answer uses, to choose among the organization's; absent with one model. */
  picker?: ModelPicker | null
  /** Where the script saves a new choice at once (the thread's settings); a new thread takes it with its first message. */
  pickerAction?: string
  /** The thread's tools to choose among the organization's, saved to `pickerAction`; absent when it has none. */
  tools?: ToolsMenu | null
}

/** A plain select inside the composer's form: without the script it goes with the message; with it, it saves at once. */
function ModelSelect({ picker, action }: { picker: ModelPicker; action?: string }): JSX.Element {
  return (
    <span class="model-picker">
      <label for="composer-model" class="visually-hidden">
        Model
      </label>
      <select
        id="composer-model"
        name="model"
        title="The model that answers"
        data-action={action ? escapeHtml(action) : undefined}
        aria-describedby={picker.note ? 'composer-model-note' : undefined}
      >
        {picker.options.map((option) => (
          <option value={escapeHtml(option.id)} selected={option.id === picker.selected} safe>
            {option.name}
          </option>
        ))}
      </select>
      {picker.note ? (
        <span id="composer-model-note" class="model-note" safe>
          {picker.note}
        </span>
      ) : null}
    </span>
  )
}

export function ToolIcon(): JSX.Element {
  return (
    <Icon size={16}>
      <path d="M14.7 6.3a1 1 0 0 0 0 1.4l1.6 1.6a1 1 0 0 0 1.4 0l3.77-3.77a6 6 0 0 1-7.94 7.94l-6.91 6.91a2.12 2.12 0 0 1-3-3l6.91-6.91a6 6 0 0 1 7.94-7.94l-3.76 3.76z" />
    </Icon>
  )
}

/** The Tools menu's button says what the thread has: all, none, or how many of those on offer. */
function toolsSummary(menu: ToolsMenu): string {
  if (menu.chosen === null) return 'All'
  const chosen = new Set(menu.chosen)
  const count = menu.offered.filter((tool) => chosen.has(tool.id)).length
  return count === 0 ? 'None' : `${count} of ${menu.offered.length}`
}

/** A tool's first sentence or line, short enough for the menu; the whole description is its title. */
function toolHint(tool: ToolOption): string {
  const first = (tool.title ?? tool.description).trim().split(/\n|(?<=\.)\s/, 1)[0] ?? ''
  return first.length > 120 ? `${first.slice(0, 119)}…` : first
}

/**
 * The thread's tools: all the organization has on, none, or some of them, by server. Its fields belong to a form of
 * their own beside the composer's (the `form` attribute), so they never go with a message: without the script Save
 * posts them to the thread's settings, with it each change is saved at once, as the model picker's.
 */
function ToolsChoice({ menu }: { menu: ToolsMenu }): JSX.Element {
  const mode = menu.chosen === null ? 'all' : menu.chosen.length === 0 ? 'none' : 'some'
  const chosen = new Set(menu.chosen ?? [])
  const servers = [...new Set(menu.offered.map((tool) => tool.server))]
  const choice = (value: string, label: string, hint?: string) => (
    <div class="check">
      <input
        type="radio"
        id={`tools-${value}`}
        name="tools_choice"
        value={value}
        form="composer-tools"
        checked={mode === value}
        aria-describedby={hint ? `tools-${value}-hint` : undefined}
      />
      <label for={`tools-${value}`}>
        <span safe>{label}</span>
        {hint ? (
          <span id={`tools-${value}-hint`} class="hint" safe>
            {hint}
          </span>
        ) : null}
      </label>
    </div>
  )
  return (
    <details class="composer-options tools-menu">
      <summary title="The tools this thread's answers may use">
        <ToolIcon /> Tools<span class="visually-hidden">:</span>{' '}
        <span class="tools-summary" safe>
          {toolsSummary(menu)}
        </span>
      </summary>
      <div class="options-panel tools-choice-panel">
        <fieldset class="tools-fieldset">
          <legend>Tools this thread's answers may use</legend>
          {choice('all', 'All tools the organization has on', 'Tools turned on later too.')}
          {choice('none', 'None')}
          {choice('some', 'Only these:')}
          <div class="tools-list">
            {servers.map((server, serverIndex) => (
              <fieldset class="tools-server">
                <legend safe>{server}</legend>
                {menu.offered
                  .filter((tool) => tool.server === server)
                  .map((tool, index) => {
                    const id = `tool-${serverIndex}-${index}`
                    return (
                      <div class="check tool-option">
                        <input
                          type="checkbox"
                          id={id}
                          name="tools"
                          value={escapeHtml(tool.id)}
                          form="composer-tools"
                          checked={chosen.has(tool.id)}
                          aria-describedby={`${id}-hint`}
                        />
                        <label for={id} title={escapeHtml(tool.description)}>
                          <span class="tool-name" safe>
                            {tool.name}
                          </span>
                          {tool.asksFirst ? <span class="badge subtle">asks first</span> : null}
                          <span id={`${id}-hint`} class="hint" safe>
                            {toolHint(tool)}
                          </span>
                        </label>
                      </div>
                    )
                  })}
              </fieldset>
            ))}
          </div>
        </fieldset>
        <button type="submit" form="composer-tools" class="tools-save">
          Save tools
        </button>
      </div>
    </details>
  )
}

/** The upload rules the script checks before sending, so a refused file is named at once (the server decides). */
const limits = JSON.stringify({
  files: filesPerRequest,
  image: { types: imageLimits.mediaTypes, bytes: imageLimits.maxBytes },
  pdf: { types: pdfLimits.mediaTypes, bytes: pdfLimits.maxBytes },
  text: { types: textLimits.mediaTypes, bytes: textLimits.maxBytes },
})

export function Composer(props: PropsWithChildren<ComposerProps>): JSX.Element {
  return (
    <section class="composer-dock" aria-labelledby="composer-title">
      <h2 id="composer-title" class="visually-hidden">
        Write a message
      </h2>
      <form
        id="composer"
        class="composer"
        method="post"
        action={escapeHtml(props.action)}
        enctype="multipart/form-data"
        data-limits={escapeHtml(limits)}
        data-running={props.running ? 'true' : 'false'}
      >
        <CsrfField token={props.csrf} />
        {props.quota && !(props.quota.refused && props.error) ? (
          <p id="composer-quota" class={props.quota.refused ? 'alert composer-quota' : 'notice composer-quota'} safe>
            {props.quota.text}
          </p>
        ) : null}
        <p id="composer-error" class="alert composer-error" role="alert" hidden={!props.error} safe>
          {props.error ?? ''}
        </p>
        <ul class="chips" aria-label="Files to send" hidden />
        <div class="composer-box">
          <label for="composer-text" class="visually-hidden">
            Message
          </label>
          <textarea
            id="composer-text"
            name="text"
            rows="1"
            required
            placeholder={escapeHtml(props.placeholder)}
            aria-describedby="composer-hint"
            safe
          >
            {props.draft ?? ''}
          </textarea>
          <div class="composer-actions">
            <label class="attach icon-button" for="composer-files" title="Attach files">
              <PaperclipIcon />
              <span class="visually-hidden">Attach files</span>
            </label>
            <input
              id="composer-files"
              class="file-input"
              name="attachments"
              type="file"
              multiple
              accept={acceptedFiles}
              aria-describedby="composer-files-hint"
            />
            {props.children}
            {props.picker ? <ModelSelect picker={props.picker} action={props.pickerAction} /> : null}
            {props.tools && props.pickerAction ? <ToolsChoice menu={props.tools} /> : null}
            <span class="composer-spacer" />
            {props.stopAction ? (
              <button
                type="submit"
                class="stop icon-button"
                formaction={escapeHtml(props.stopAction)}
                formnovalidate
                title="Stop the answer"
                hidden={!props.running}
              >
                <StopIcon />
                <span>Stop</span>
              </button>
            ) : null}
            <button type="submit" class="send icon-button" title="Send (Enter)">
              <SendIcon />
              <span class="visually-hidden">Send</span>
            </button>
          </div>
        </div>
        <p id="composer-hint" class="composer-hint">
          <span class="js-only">Enter sends, Shift+Enter adds a line. </span>
          <span id="composer-files-hint" safe>
            {filesHint}
          </span>
        </p>
      </form>
      {/* The Tools menu's fields belong to this form: a form may not hold another, and they never go with a message. */}
      {props.tools && props.pickerAction ? (
        <form id="composer-tools" method="post" action={escapeHtml(props.pickerAction)}>
          <CsrfField token={props.csrf} />
        </form>
      ) : null}
    </section>
  )
}

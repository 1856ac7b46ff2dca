// The composer at the bottom of the chat, for a new thread and for a reply: a form that posts as it is (the
// `text` field and the `attachments` file input are the contract scripts drive), which the browser script turns
// into Enter-to-send, removable file chips, drag-and-drop and paste, and a send that does not reload the page.
import { escapeHtml, type PropsWithChildren } from '@kitajs/html'
import { filesPerRequest, imageLimits, pdfLimits, textLimits } from '../../attachments/limits'
import { CsrfField } from '../../web/components'
import { PaperclipIcon, SendIcon, StopIcon } from './chat-layout'
import { acceptedFiles, filesHint } from './parts'

/** The composer's model picker: the models on offer, the one chosen, and a note when a removed one fell back. */
export interface ModelPicker {
  options: { id: string; name: string }[]
  selected: string
  /** Said beside it when the thread's own choice is no longer available and the default answers instead. */
  note?: string
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
    </section>
  )
}

// Times in the reader's own time zone: the server writes `<time datetime>` in UTC (it cannot know the zone); here
// a recent one reads "5 minutes ago" and an older one as a local date, with the exact local time on hover.

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' })
const exact = new Intl.DateTimeFormat(undefined, { dateStyle: 'full', timeStyle: 'long' })
const sameYear = new Intl.DateTimeFormat(undefined, {
  month: 'short',
  day: 'numeric',
  hour: 'numeric',
  minute: '2-digit',
})
const otherYear = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' })

const minute = 60_000
const hour = 60 * minute
const day = 24 * hour

export function describeTime(at: Date, now: Date): string {
  const ago = now.getTime() - at.getTime()
  if (ago < minute) return 'just now'
  if (ago < hour) return relative.format(-Math.floor(ago / minute), 'minute')
  if (ago < day) return relative.format(-Math.floor(ago / hour), 'hour')
  if (ago < 7 * day) return relative.format(-Math.floor(ago / day), 'day')
  return at.getFullYear() === now.getFullYear() ? sameYear.format(at) : otherYear.format(at)
}

export function rewriteTimes(root: ParentNode): void {
  const now = new Date()
  for (const element of root.querySelectorAll<HTMLTimeElement>('time[datetime]')) {
    const at = new Date(element.dateTime)
    if (Number.isNaN(at.getTime())) continue
    element.textContent = describeTime(at, now)
    element.title = exact.format(at)
  }
}

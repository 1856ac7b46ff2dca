// CSV as the downloads write it (RFC 4180, CRLF line ends).

/** RFC 4180: a field holding a comma, quote or line break is quoted, its quotes doubled. */
export function csvField(value: string | number | boolean | null): string {
  const text = value === null ? '' : String(value)
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

/**
 * A field of text someone else chose (a user agent, a name): one a spreadsheet would read as a formula (it starts
 * with =, +, -, @, a tab or a carriage return) is led by an apostrophe, so opening the file runs nothing (OWASP,
 * "CSV Injection").
 */
export function csvText(value: string | null): string {
  return csvField(value !== null && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value)
}

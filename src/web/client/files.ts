// The upload rules as the composer checks them before sending (the server decides from the bytes all the same):
// a refused file is named at once, in plain words, and the others are kept.

export interface Limits {
  files: number
  image: { types: string[]; bytes: number }
  pdf: { types: string[]; bytes: number }
  text: { types: string[]; bytes: number }
}

const textExtensions = /\.(txt|md|markdown|csv)$/i

function size(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${Math.round(bytes / 1024 / 1024)} MB` : `${Math.ceil(bytes / 1024)} KB`
}

function refusal(file: File, rules: Limits): string | null {
  const { image, pdf, text } = rules
  if (image.types.includes(file.type)) {
    return file.size > image.bytes
      ? `${file.name} is ${size(file.size)}; images may be up to ${size(image.bytes)}.`
      : null
  }
  if (pdf.types.includes(file.type)) {
    return file.size > pdf.bytes ? `${file.name} is ${size(file.size)}; PDFs may be up to ${size(pdf.bytes)}.` : null
  }
  if (text.types.includes(file.type) || textExtensions.test(file.name)) {
    return file.size > text.bytes
      ? `${file.name} is ${size(file.size)}; text files may be up to ${size(text.bytes)}.`
      : null
  }
  return `${file.name} cannot be sent: only JPEG, PNG, GIF or WebP images, PDFs, and text, Markdown or CSV files.`
}

/** Which of `files` may join the `already` chosen ones, and why each other one may not. */
export function checkFiles(files: File[], already: number, rules: Limits): { accepted: File[]; refusals: string[] } {
  const accepted: File[] = []
  const refusals: string[] = []
  for (const file of files) {
    const reason = refusal(file, rules)
    if (reason) refusals.push(reason)
    else if (already + accepted.length >= rules.files) {
      refusals.push(`${file.name} was left out: a message may carry up to ${rules.files} files.`)
    } else accepted.push(file)
  }
  return { accepted, refusals }
}

// What a search query means and what a search document holds, defined once for both databases and for snippets
// (pure: no storage). Both backends index the tokens made here verbatim, so SQLite and PostgreSQL match the same
// words by construction, and a snippet highlights exactly what the index matched:
// - A token is a folded word (letters, digits and combining marks, so Thai, Devanagari and Hebrew words stay whole),
//   or, in scripts written without spaces (Chinese, Japanese, Thai, Lao, Khmer, Myanmar), each pair of adjacent
//   characters, since those scripts are searched by any run of characters rather than by words.
// - A query is a list of terms: an unquoted word of 2+ characters matches every word starting with it, a quoted word
//   only itself, a quoted phrase (or a run of 3+ characters of a script without spaces) its words in that order.
// Offsets are UTF-16 code units throughout: JavaScript clients (the web app, MCP hosts) slice strings in them.

/** A query's words beyond this many are ignored (a phrase's words count each). */
export const maxQueryWords = 16

/**
 * Combining marks folding drops, after canonical decomposition: the diacritics of Latin, Greek and Cyrillic, Hebrew
 * points and Arabic harakat. Other scripts' vowel signs (Indic, Thai) are kept: there they are letters in effect.
 * Applied to words only, so the Hebrew punctuation inside U+0591–05C7 never reaches it.
 */
const droppedMarks =
  /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f\u0591-\u05c7\u064b-\u065f\u0670]/g

/** Lower-case letters that no decomposition takes apart, folded as people type them without the keyboard for them. */
const letterFolds: Record<string, string> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  ł: 'l',
  đ: 'd',
  ħ: 'h',
  ı: 'i',
  ς: 'σ',
  ſ: 's',
}
const foldedLetters = /[ßæœøłđħıςſ]/g
/** What compatibility decomposition can add to a word that is no part of one (`⑴` is `(1)`): never in a token. */
const notWordCharacters = /[^\p{L}\p{N}\p{M}]/gu
const asciiWord = /^[a-zA-Z0-9]*$/

/**
 * A word as the index holds it: compatibility-decomposed (full-width letters, ligatures, both normal forms alike),
 * without diacritics, recomposed, lower-cased without a locale, and with the letters of `letterFolds` spelled out.
 * Queries and documents go through this one function, so `cafe`, `café` and `cafe` + U+0301 all find each other.
 */
export function fold(word: string): string {
  // Most words are ASCII, where folding is lower-casing.
  if (asciiWord.test(word)) return word.toLowerCase()
  return word
    .normalize('NFKD')
    .replace(droppedMarks, '')
    .normalize('NFC')
    .toLowerCase()
    .replace(foldedLetters, (letter) => letterFolds[letter] as string)
    .replace(notWordCharacters, '')
}

/**
 * A run of characters of the scripts written without spaces, or a run of other letters, digits and marks: a run
 * boundary also separates the two (`東京2024` is `東京` and `2024`). By script, plus the marks Hiragana and Katakana
 * share (ー, the voicing and iteration marks), which Unicode files under no one script; not by script extensions,
 * which also list Latin combining marks (U+0303) among Thai's. The lookahead keeps the scripts' punctuation (、。)
 * out of words.
 */
const spacelessCharacters =
  '\\p{sc=Han}\\p{sc=Hira}\\p{sc=Kana}\\p{sc=Thai}\\p{sc=Laoo}\\p{sc=Khmr}\\p{sc=Mymr}\\u3006\\u3031-\\u3035\\u303b\\u303c\\u3099-\\u309c\\u30fc\\uff70\\uff9e\\uff9f'
const runs = new RegExp(
  `((?:(?=[\\p{L}\\p{N}\\p{M}])[${spacelessCharacters}])+)|(?:(?![${spacelessCharacters}])[\\p{L}\\p{N}\\p{M}])+`,
  'gu',
)
const spaceless = new RegExp(`[${spacelessCharacters}]`, 'u')

/**
 * A character with the marks that follow it: a bigram pairs these, and no range splits one. The half-width kana
 * voicing marks are letters in Unicode but decompose to combining marks, so they stay with their kana (`ｶﾞ` is `ガ`).
 */
const clusters = /[^\p{M}\uff9e\uff9f][\p{M}\uff9e\uff9f]*|[\p{M}\uff9e\uff9f]+/gu
const continues = /^[\p{M}\uff9e\uff9f]/u
const wordCharacter = /^[\p{L}\p{N}\p{M}]/u

/** A token of a text, and where it stands in it: `[start, end)` in UTF-16 code units. */
export interface Token {
  token: string
  start: number
  end: number
}

/** A text's runs in order, each with its tokens: a run without spaces has several, any other run one (or none). */
function tokenRuns(text: string): { spaceless: boolean; tokens: Token[] }[] {
  const found: { spaceless: boolean; tokens: Token[] }[] = []
  for (const run of text.matchAll(runs)) {
    const start = run.index
    if (run[1] === undefined) {
      const token = fold(run[0])
      if (token !== '') found.push({ spaceless: false, tokens: [{ token, start, end: start + run[0].length }] })
      continue
    }
    const characters: Token[] = []
    for (const cluster of run[0].matchAll(clusters)) {
      const token = fold(cluster[0])
      const at = start + cluster.index
      if (token !== '') characters.push({ token, start: at, end: at + cluster[0].length })
    }
    // A run of one character is itself; a longer run is its overlapping pairs (我住在 is 我住 住在).
    const tokens =
      characters.length === 1
        ? characters
        : characters.slice(1).map((second, i) => {
            const first = characters[i] as Token
            return { token: first.token + second.token, start: first.start, end: second.end }
          })
    if (tokens.length > 0) found.push({ spaceless: true, tokens })
  }
  return found
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range
const asciiText = /^[\x00-\x7f]*$/
const asciiWords = /[a-zA-Z0-9]+/g

/**
 * Every token of a text in order, with its place in the text. An ASCII text, most of what is searched, is its runs
 * of ASCII letters and digits lower-cased (the only letters, digits and marks ASCII has, none of them a script
 * without spaces): the same tokens several times faster than the Unicode expressions find them.
 */
export function searchTokens(text: string): Token[] {
  if (!asciiText.test(text)) return tokenRuns(text).flatMap((run) => run.tokens)
  // Lower-casing ASCII keeps every offset.
  const lower = text.toLowerCase()
  const tokens: Token[] = []
  for (const word of lower.matchAll(asciiWords)) {
    tokens.push({ token: word[0], start: word.index, end: word.index + word[0].length })
  }
  return tokens
}

/**
 * Whether a text may hold one of the terms: false only when it certainly holds none. An ASCII text's tokens are its
 * lower-cased words, so a term's tokens must each be found in the lower-cased text; any other text may hold any.
 * What lets a snippet skip tokenizing the many sources that hold none of a rare query's words.
 */
function mayHold(text: string, terms: readonly Term[]): boolean {
  if (!asciiText.test(text)) return true
  const lower = text.toLowerCase()
  return terms.some((term) => (term.kind === 'phrase' ? term.tokens : [term.token]).every((t) => lower.includes(t)))
}

/** What the index holds for a document of these texts: each distinct token once, separated by spaces. */
export function documentTokens(sources: Iterable<string>): string {
  const distinct = new Set<string>()
  for (const source of sources) for (const { token } of searchTokens(source)) distinct.add(token)
  return [...distinct].join(' ')
}

/**
 * One thing a thread must hold to match: a word starting with `token` (an unquoted word of 2+ characters), exactly
 * `token` (a quoted word, a word of one character, a pair of characters without spaces), or `tokens` one after
 * another in one source (a quoted phrase; a run of 3+ characters without spaces, as its pairs).
 */
export type Term =
  | { kind: 'prefix'; token: string }
  | { kind: 'word'; token: string }
  | { kind: 'phrase'; tokens: string[] }

/** Code points, the unit of "characters" here and in both indexes' prefix lengths. */
const characters = (token: string) => [...token].length

/** Double-quoted text, straight or curly; an opening quote that is never closed is no quote. */
const quoted = /["“]([^"”]*)["”]/g

/**
 * The terms a query asks for, in order, each once, or null when it holds no word. Nothing else is syntax: `-`, `OR`,
 * `*` and `:` separate words or are ignored. The first 16 words count; a phrase cut by the limit keeps its first words.
 */
export function parseQuery(q: string): Term[] | null {
  const terms: Term[] = []
  let words = 0
  const add = (tokens: string[], exact: boolean) => {
    const kept = tokens.slice(0, maxQueryWords - words)
    words += kept.length
    const [first] = kept
    if (first === undefined) return
    if (kept.length > 1) terms.push({ kind: 'phrase', tokens: kept })
    else terms.push({ kind: exact || characters(first) < 2 ? 'word' : 'prefix', token: first })
  }
  const unquoted = (text: string) => {
    for (const run of tokenRuns(text)) {
      // A word is a prefix; a run without spaces is matched as written (its pairs in order), never as a prefix.
      add(
        run.tokens.map(({ token }) => token),
        run.spaceless,
      )
    }
  }
  let from = 0
  for (const phrase of q.matchAll(quoted)) {
    unquoted(q.slice(from, phrase.index))
    add(
      searchTokens(phrase[1] as string).map(({ token }) => token),
      true,
    )
    from = phrase.index + phrase[0].length
  }
  unquoted(q.slice(from))
  const distinct = new Map(terms.map((term) => [JSON.stringify(term), term]))
  return distinct.size === 0 ? null : [...distinct.values()]
}

/** The index's own prefixes: every token's first 2 to this many characters (FTS5 `prefix='2 3 4'`; PostgreSQL keys). */
export const indexedPrefixChars = 4
/** A longer prefix is expanded to the vocabulary's words that start with it, at most this many… */
export const expansionLimit = 64
/** …and at most this many over the whole query; past either, the database scans its own terms (correct, slower). */
export const queryExpansionLimit = 256

/** The tokens of a document that the vocabulary (`search_terms`) keeps: those prefixes of 5+ characters expand to. */
export function vocabularyWords(tokens: Iterable<string>): string[] {
  return [...tokens].filter((token) => characters(token) > indexedPrefixChars)
}

/** The prefixes of a query that expand through the vocabulary: read each as `vocabularyRange` before compiling. */
export function vocabularyPrefixes(terms: readonly Term[]): string[] {
  return [
    ...new Set(
      terms.flatMap((term) =>
        term.kind === 'prefix' && characters(term.token) > indexedPrefixChars ? [term.token] : [],
      ),
    ),
  ]
}

/**
 * The vocabulary's words starting with `prefix` are those in `[from, to)`: both databases compare these columns by
 * code point (SQLite's binary collation of UTF-8, PostgreSQL's "C"), and no character sorts after U+10FFFF.
 */
export const vocabularyRange = (prefix: string) => ({ from: prefix, to: `${prefix}\u{10ffff}` })

/**
 * What each prefix of `vocabularyPrefixes` expands to: the vocabulary's words in its range, read with a limit of
 * `expansionLimit + 1` so that a prefix with too many shows it. A prefix not read is scanned by the database.
 */
export type Vocabulary = ReadonlyMap<string, readonly string[]>

/**
 * One token the index must hold: exactly `token`; a word starting with it from the index's own prefixes (2–4
 * characters); or one the database finds by scanning its terms (a prefix the vocabulary could not expand).
 */
export type IndexMatch =
  | { kind: 'exact'; token: string }
  | { kind: 'indexed-prefix'; token: string }
  | { kind: 'scanned-prefix'; token: string }

/**
 * A query as both databases ask their index: every group must match (AND), by any one of its matches (OR). The
 * indexes hold no positions, so a thread they find must also hold each of `phrases` in one of its sources (rechecked
 * on the candidates with `holdsPhrase`).
 */
export interface CompiledQuery {
  all: IndexMatch[][]
  phrases: string[][]
}

/** Compiles parsed terms for the index, with the vocabulary read for their long prefixes. */
export function compileTerms(terms: readonly Term[], vocabulary: Vocabulary): CompiledQuery {
  const all: IndexMatch[][] = []
  const phrases: string[][] = []
  let expansions = 0
  for (const term of terms) {
    if (term.kind === 'phrase') {
      for (const token of term.tokens) all.push([{ kind: 'exact', token }])
      phrases.push(term.tokens)
    } else if (term.kind === 'word') {
      all.push([{ kind: 'exact', token: term.token }])
    } else if (characters(term.token) <= indexedPrefixChars) {
      all.push([{ kind: 'indexed-prefix', token: term.token }])
    } else {
      const words = vocabulary.get(term.token)
      if (words === undefined || words.length > expansionLimit || expansions + words.length > queryExpansionLimit) {
        all.push([{ kind: 'scanned-prefix', token: term.token }])
      } else {
        expansions += words.length
        // No word of the vocabulary starts with it: nothing can match, which its own exact token says.
        const tokens = words.length > 0 ? words : [term.token]
        all.push(tokens.map((token) => ({ kind: 'exact', token })))
      }
    }
  }
  const distinct = new Map(all.map((group) => [JSON.stringify(group), group]))
  return { all: [...distinct.values()], phrases }
}

/** Whether a source's tokens (in order) hold `phrase`'s tokens one after another. */
export function holdsPhrase(tokens: readonly string[], phrase: readonly string[]): boolean {
  return tokens.some((_, i) => phrase.every((token, k) => tokens[i + k] === token))
}

/**
 * A check of whether a text holds `phrase`: holdsPhrase over the text's tokens. For ASCII text, whose tokens are its
 * lower-cased runs of letters and digits, one regular expression answers the same without making the tokens, about
 * thirty times faster: a search with a phrase checks every text of every thread the index finds.
 */
export function phraseMatcher(phrase: readonly string[]): (text: string) => boolean {
  const expression = phrase.every((token) => asciiWord.test(token))
    ? new RegExp(`(?<![a-z0-9])${phrase.join('[^a-z0-9]+')}(?![a-z0-9])`)
    : null
  return (text) => {
    if (!asciiText.test(text))
      return holdsPhrase(
        searchTokens(text).map(({ token }) => token),
        phrase,
      )
    return expression?.test(text.toLowerCase()) ?? false
  }
}

/** Where a term matches in a text's tokens: the matching tokens' indexes, `[first, last]`. */
function termMatches(tokens: readonly Token[], term: Term): [number, number][] {
  const found: [number, number][] = []
  if (term.kind === 'phrase') {
    const n = term.tokens.length
    for (let i = 0; i + n <= tokens.length; i++) {
      if (term.tokens.every((token, k) => tokens[i + k]?.token === token)) found.push([i, i + n - 1])
    }
    return found
  }
  tokens.forEach(({ token }, i) => {
    if (term.kind === 'word' ? token === term.token : token.startsWith(term.token)) found.push([i, i])
  })
  return found
}

/**
 * Where the terms match in a text, term by term, each in text order. An ASCII text without phrases is searched
 * directly (asciiHits), a word only where one starts: the tokens of a long source are many and mostly no match.
 */
function termHits(text: string, terms: readonly Term[]): Hit[] {
  if (asciiText.test(text) && terms.every((term) => term.kind !== 'phrase')) return asciiHits(text, terms)
  return tokenHits(text, terms)
}

/** termHits from the text's tokens: any text, any term. Exported for the test that holds asciiHits to it. */
export function tokenHits(text: string, terms: readonly Term[]): Hit[] {
  const tokens = searchTokens(text)
  return terms.flatMap((term, index) =>
    termMatches(tokens, term).map(([first, last]): Hit => {
      const start = (tokens[first] as Token).start
      const end = (tokens[last] as Token).end
      const at: [number, number] =
        term.kind === 'prefix' ? [start, start + prefixLength(text.slice(start, end), term.token)] : [start, end]
      return { term: index, at, span: [start, end] }
    }),
  )
}

const asciiWordCharacter = (code: number) =>
  (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122)

/**
 * termHits of an ASCII text for words and prefixes (no phrases): each place a term's token starts a word of the
 * lower-cased text, the word's whole length its span; a quoted word only where the word ends with it. A token
 * beyond ASCII matches no word here. Exported for the test that holds it to tokenHits.
 */
export function asciiHits(text: string, terms: readonly Term[]): Hit[] {
  const lower = text.toLowerCase()
  const hits: Hit[] = []
  terms.forEach((term, index) => {
    if (term.kind === 'phrase') throw new Error('asciiHits takes no phrase')
    const { token } = term
    for (let at = lower.indexOf(token); at !== -1; at = lower.indexOf(token, at + 1)) {
      if (at > 0 && asciiWordCharacter(lower.charCodeAt(at - 1))) continue
      let end = at + token.length
      while (end < lower.length && asciiWordCharacter(lower.charCodeAt(end))) end += 1
      if (term.kind === 'word' && end !== at + token.length) continue
      hits.push({ term: index, at: [at, term.kind === 'prefix' ? at + token.length : end], span: [at, end] })
    }
  })
  return hits
}

/** The longest snippet, in UTF-16 code units, its ellipses included. */
export const snippetLength = 200
const ellipsis = '…'

/** A text a snippet may come from: a message's, a file's text or name, or the thread's name (both IDs null). */
export interface SnippetSource {
  messageId: string | null
  attachmentId: string | null
  text: string
}

/**
 * What `searchSources` reads of each thread: a snippet is about 200 characters, and a page of up to 200 threads must
 * not read whole threads of thousands of messages. Each thread's newest `messages` active messages, each up to its
 * first `messageChars` characters, sharing `threadChars` (a newer message takes its text first, the one that crosses
 * the limit is cut, later ones give none); the first `files` files they attach (newest message first, then in the
 * message's order), whose texts share `fileChars` likewise. A match beyond these is still found by search, and its
 * snippet is then another passage of the thread, or its name, marked nowhere.
 */
export const searchSourceBounds = {
  messages: 50,
  messageChars: 20_000,
  threadChars: 50_000,
  files: 20,
  fileChars: 50_000,
}

export interface Snippet {
  messageId: string | null
  attachmentId: string | null
  snippet: string
  /** `[start, end)` of each match in `snippet`, in UTF-16 code units, sorted and not overlapping. */
  highlights: [number, number][]
}

/** One match in a text: what to mark (`at`), and the whole tokens it stands in (`span`), which a cut never splits. */
export interface Hit {
  term: number
  at: [number, number]
  span: [number, number]
}

/**
 * The best passage of a thread for a query: from the source holding the most distinct terms (the first such, so the
 * caller lists sources in order of preference: active messages newest first, file texts, file names, the thread's
 * name), the window of at most 200 code units holding the most distinct terms, then the most matches. When no source
 * holds a term (the index and the sources were read apart), the start of the first source, marked nowhere; null
 * without sources.
 */
export function buildSnippet(sources: readonly SnippetSource[], terms: readonly Term[]): Snippet | null {
  let best: { source: SnippetSource; text: string; hits: Hit[]; held: number } | undefined
  for (const source of sources) {
    const hopeless = !mayHold(source.text, terms)
    if (hopeless && best !== undefined) continue
    // Offsets are the collapsed text's: the snippet shows whitespace runs, newlines included, as one space.
    const text = source.text.replace(/\s+/gu, ' ').trim()
    const hits = hopeless ? [] : termHits(text, terms)
    const held = new Set(hits.map((hit) => hit.term)).size
    if (best === undefined || held > best.held) best = { source, text, hits, held }
    if (held === terms.length) break
  }
  if (best === undefined) return null
  const { source, text, hits } = best
  hits.sort((a, b) => a.span[0] - b.span[0] || a.span[1] - b.span[1])
  const [from, to] = bestWindow(hits)
  const [start, end] = passage(text, from, to)
  const before = start > 0 ? 1 : 0
  const highlights: [number, number][] = []
  for (const { at } of hits.toSorted((a, b) => a.at[0] - b.at[0] || a.at[1] - b.at[1])) {
    const mark: [number, number] = [Math.max(at[0], start) - start + before, Math.min(at[1], end) - start + before]
    if (mark[0] >= mark[1]) continue
    const last = highlights.at(-1)
    if (last && mark[0] < last[1]) last[1] = Math.max(last[1], mark[1])
    else highlights.push(mark)
  }
  return {
    messageId: source.messageId,
    attachmentId: source.attachmentId,
    snippet: (before ? ellipsis : '') + text.slice(start, end) + (end < text.length ? ellipsis : ''),
    highlights,
  }
}

/**
 * How much of a word's original text a prefix covers: its characters (with their marks) up to where their folded
 * form is as long as the prefix, so `caf` marks `Caf` of `Café`, and `strass` marks `Straß` of `Straße`.
 */
function prefixLength(word: string, prefix: string): number {
  // An ASCII word folds character for character.
  if (asciiWord.test(word)) return Math.min(prefix.length, word.length)
  for (const cluster of word.matchAll(clusters)) {
    const end = cluster.index + cluster[0].length
    if (fold(word.slice(0, end)).length >= prefix.length) return end
  }
  return word.length
}

/** The range of the sorted hits to show: within one window, the most distinct terms, then the most hits. */
function bestWindow(hits: readonly Hit[]): [number, number] {
  // Room for both ellipses: the hits of a window always fit in it whole.
  const room = snippetLength - 2
  let best: [number, number] = [0, 0]
  let bestScore = [-1, -1]
  for (let i = 0; i < hits.length; i++) {
    const first = hits[i] as Hit
    const terms = new Set<number>()
    let end = first.span[1]
    let count = 0
    for (let j = i; j < hits.length; j++) {
      const hit = hits[j] as Hit
      if (hit.span[1] - first.span[0] > room && j > i) break
      terms.add(hit.term)
      end = Math.max(end, hit.span[1])
      count += 1
    }
    if (terms.size > (bestScore[0] as number) || (terms.size === bestScore[0] && count > (bestScore[1] as number))) {
      bestScore = [terms.size, count]
      best = [first.span[0], end]
    }
  }
  return best
}

/** Whether a passage may start or end at `at`: not inside a word (except between characters without spaces). */
function boundary(text: string, at: number): boolean {
  if (at <= 0 || at >= text.length) return true
  const code = text.charCodeAt(at)
  if (code >= 0xdc00 && code <= 0xdfff) return false
  const next = String.fromCodePoint(text.codePointAt(at) as number)
  if (continues.test(next)) return false
  const low = text.charCodeAt(at - 1)
  const back = low >= 0xdc00 && low <= 0xdfff && at >= 2 ? 2 : 1
  const previous = text.slice(at - back, at)
  if (!wordCharacter.test(previous) || !wordCharacter.test(next)) return true
  return spaceless.test(previous) || spaceless.test(next)
}

/** Whether `at` is between two characters (not inside a surrogate pair, nor before a mark). */
function characterBoundary(text: string, at: number): boolean {
  if (at <= 0 || at >= text.length) return true
  const code = text.charCodeAt(at)
  return !(code >= 0xdc00 && code <= 0xdfff) && !continues.test(String.fromCodePoint(text.codePointAt(at) as number))
}

/**
 * The passage `[start, end)` of `text` around the hits in `[from, to)`: it starts a quarter window before the first
 * hit (or earlier, to fill the window near the text's end), widens to whole words, then narrows from the side
 * farther from the hits, a word at a time, until it fits in the snippet with its ellipses. A word longer than the
 * window is cut between two characters.
 */
function passage(text: string, from: number, to: number): [number, number] {
  const n = text.length
  if (n <= snippetLength) return [0, n]
  let start = Math.max(0, from - snippetLength / 4, to - (snippetLength - 2))
  let end = Math.min(n, start + snippetLength)
  if (end === n) start = n - snippetLength
  while (!boundary(text, start)) start -= 1
  while (!boundary(text, end)) end += 1
  const size = () => (start > 0 ? 1 : 0) + (end - start) + (end < n ? 1 : 0)
  while (size() > snippetLength) {
    const after = end - to
    const before = from - start
    if (after > 0 && after >= before) {
      end -= 1
      while (end > to && !boundary(text, end)) end -= 1
    } else if (before > 0) {
      start += 1
      while (start < from && !boundary(text, start)) start += 1
    } else {
      break
    }
  }
  if (size() > snippetLength) {
    end = start + snippetLength - (start > 0 ? 2 : 1)
    while (!characterBoundary(text, end)) end -= 1
  }
  // A cut next to a space shows the ellipsis against the word.
  if (start > 0 && text[start] === ' ') start += 1
  if (end < n && text[end - 1] === ' ') end -= 1
  return [start, end]
}

// Search text, pure: folding, tokens, the query grammar, compiling terms for the indexes and snippets. No database:
// the same module feeds both backends, which search-semantics.test.ts checks through the API.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import {
  asciiHits,
  buildSnippet,
  compileTerms,
  documentTokens,
  fold,
  holdsPhrase,
  maxQueryWords,
  parseQuery,
  phraseMatcher,
  type SnippetSource,
  searchTokens,
  snippetLength,
  type Term,
  tokenHits,
  vocabularyPrefixes,
  vocabularyRange,
  vocabularyWords,
} from '../src/threads/search-text'

const tokensOf = (text: string) => searchTokens(text).map(({ token }) => token)
const message = (text: string, messageId = 'm1'): SnippetSource => ({ messageId, attachmentId: null, text })
const snippetOf = (q: string, ...sources: SnippetSource[]) => buildSnippet(sources, parseQuery(q) ?? [])
/** What each highlight of a snippet marks. */
const marked = (snippet: { snippet: string; highlights: [number, number][] } | null) =>
  snippet?.highlights.map(([start, end]) => snippet.snippet.slice(start, end))

describe('folding', () => {
  test.each([
    ['Café', 'cafe'],
    ['Cafe\u0301', 'cafe'],
    ['CAFÉ', 'cafe'],
    ['Ｌｙｏｎ', 'lyon'],
    ['ﬁle', 'file'],
    ['Straße', 'strasse'],
    ['STRAẞE', 'strasse'],
    ['Ἀθῆναι', 'αθηναι'],
    ['Άλφα', 'αλφα'],
    ['ΟΔΟΣ', 'οδοσ'],
    ['οδός', 'οδοσ'],
    ['שָׁלוֹם', 'שלום'],
    ['مَرْحَبًا', 'مرحبا'],
    ['Ærøskøbing', 'aeroskobing'],
    ['Łódź', 'lodz'],
    ['İstanbul', 'istanbul'],
    ['ıi', 'ii'],
    ['Phở', 'pho'],
    ['Œuvre', 'oeuvre'],
    ['ſtar', 'star'],
    ['⑴', '1'],
    // Other scripts' vowel signs are letters in effect: kept.
    ['नमस्ते', 'नमस्ते'],
    ['สวัสดี', 'สวัสดี'],
    ['한국'.normalize('NFD'), '한국'],
  ])('%s folds to %s', (word, folded) => {
    expect(fold(word)).toBe(folded)
  })

  test('both normal forms and the compatibility forms of a word fold alike', () => {
    for (const word of ['Zürich', 'Ångström', 'crème brûlée', 'Ｃａｆé', 'Đà Nẵng']) {
      const forms = ['NFC', 'NFD', 'NFKC', 'NFKD'].map((form) => tokensOf(word.normalize(form)))
      for (const form of forms) expect(form).toEqual(forms[0] as string[])
    }
  })
})

describe('tokens', () => {
  test('words are letters, digits and marks; everything else separates them', () => {
    expect(tokensOf('Budget-2024.pdf: "weekend" in Lyon, great🥰 e-mail')).toEqual([
      'budget',
      '2024',
      'pdf',
      'weekend',
      'in',
      'lyon',
      'great',
      'e',
      'mail',
    ])
  })

  test('a run without spaces is its overlapping pairs; a lone character is itself', () => {
    expect(tokensOf('我住在东京都')).toEqual(['我住', '住在', '在东', '东京', '京都'])
    expect(tokensOf('东')).toEqual(['东'])
    expect(tokensOf('東京2024')).toEqual(['東京', '2024'])
    // The scripts' own punctuation separates runs; the prolonged sound mark belongs to them.
    expect(tokensOf('東京、大阪。コーヒー')).toEqual(['東京', '大阪', 'コー', 'ーヒ', 'ヒー'])
    // Full-width and half-width kana fold alike, voicing marks included.
    expect(tokensOf('ｶﾞｷﾞ')).toEqual(tokensOf('ガギ'))
  })

  test('Thai pairs characters with their marks; Devanagari and Hebrew words stay whole', () => {
    expect(tokensOf('สวัสดี')).toEqual(['สวั', 'วัส', 'สดี'])
    expect(tokensOf('नमस्ते दुनिया')).toEqual(['नमस्ते', 'दुनिया'])
    expect(tokensOf('שָׁלוֹם עוֹלָם')).toEqual(['שלום', 'עולם'])
    expect(tokensOf('안녕하세요 세계')).toEqual(['안녕하세요', '세계'])
  })

  test('offsets are UTF-16 code units of the original text, around emoji and combining marks', () => {
    const text = '😀 Cafe\u0301 东京都 x'
    expect(searchTokens(text)).toEqual([
      { token: 'cafe', start: 3, end: 8 },
      { token: '东京', start: 9, end: 11 },
      { token: '京都', start: 10, end: 12 },
      { token: 'x', start: 13, end: 14 },
    ])
  })

  test('a document is its distinct tokens, with nothing an index would split or read as syntax', () => {
    const document = documentTokens(['Lyon lyon LYON', 'Ｌｙｏｎ (1) ⑴ 我住在', 'a_b "c" -d'])
    expect(document).toBe('lyon 1 我住 住在 a b c d')
    for (const token of document.split(' ')) expect(token).toMatch(/^[\p{L}\p{N}\p{M}]+$/u)
  })
})

describe('query grammar', () => {
  test.each<[string, Term[] | null]>([
    ['lyo', [{ kind: 'prefix', token: 'lyo' }]],
    ['"mark"', [{ kind: 'word', token: 'mark' }]],
    [
      'a lyon',
      [
        { kind: 'word', token: 'a' },
        { kind: 'prefix', token: 'lyon' },
      ],
    ],
    [
      'trip "weekend in Lyon"',
      [
        { kind: 'prefix', token: 'trip' },
        { kind: 'phrase', tokens: ['weekend', 'in', 'lyon'] },
      ],
    ],
    ['“weekend in”', [{ kind: 'phrase', tokens: ['weekend', 'in'] }]],
    // An unbalanced quote is ignored: its words stay ordinary words while it is being typed.
    [
      '"weekend in ly',
      [
        { kind: 'prefix', token: 'weekend' },
        { kind: 'prefix', token: 'in' },
        { kind: 'prefix', token: 'ly' },
      ],
    ],
    ['café CAFE cafe\u0301', [{ kind: 'prefix', token: 'cafe' }]],
    [
      '-lyon OR NEAR* :x',
      [
        { kind: 'prefix', token: 'lyon' },
        { kind: 'prefix', token: 'or' },
        { kind: 'prefix', token: 'near' },
        { kind: 'word', token: 'x' },
      ],
    ],
    ['东京', [{ kind: 'word', token: '东京' }]],
    ['东', [{ kind: 'word', token: '东' }]],
    ['东京都', [{ kind: 'phrase', tokens: ['东京', '京都'] }]],
    ['ß', [{ kind: 'prefix', token: 'ss' }]],
    ['"" — !', null],
    ['   ', null],
  ])('%s', (q, terms) => {
    expect(parseQuery(q)).toEqual(terms)
  })

  test(`the first ${maxQueryWords} words count, a phrase's words each`, () => {
    const words = Array.from({ length: 20 }, (_, i) => `w${i}`)
    expect(parseQuery(words.join(' '))?.map((term) => (term.kind === 'phrase' ? '' : term.token))).toEqual(
      words.slice(0, maxQueryWords),
    )
    const cut = parseQuery(`${words.slice(0, 14).join(' ')} "one two three"`)
    expect(cut?.at(-1)).toEqual({ kind: 'phrase', tokens: ['one', 'two'] })
    expect(parseQuery(`${words.slice(0, 15).join(' ')} "one two three"`)?.at(-1)).toEqual({
      kind: 'word',
      token: 'one',
    })
  })
})

describe('compiling terms for the index', () => {
  const terms = parseQuery('ab lyonnais "x y" q') as Term[]

  test('short prefixes use the index own prefixes; longer ones expand through the vocabulary', () => {
    expect(vocabularyPrefixes(terms)).toEqual(['lyonnais'])
    expect(compileTerms(terms, new Map([['lyonnais', ['lyonnais', 'lyonnaise']]]))).toEqual({
      all: [
        [{ kind: 'indexed-prefix', token: 'ab' }],
        [
          { kind: 'exact', token: 'lyonnais' },
          { kind: 'exact', token: 'lyonnaise' },
        ],
        [{ kind: 'exact', token: 'x' }],
        [{ kind: 'exact', token: 'y' }],
        [{ kind: 'exact', token: 'q' }],
      ],
      phrases: [['x', 'y']],
    })
  })

  test('a prefix the vocabulary cannot expand is scanned; one with no word matches nothing but itself', () => {
    const scanned = [{ kind: 'scanned-prefix' as const, token: 'lyonnais' }]
    expect(compileTerms(terms, new Map()).all[1]).toEqual(scanned)
    const many = Array.from({ length: 65 }, (_, i) => `lyonnais${i}`)
    expect(compileTerms(terms, new Map([['lyonnais', many]])).all[1]).toEqual(scanned)
    expect(compileTerms(terms, new Map([['lyonnais', []]])).all[1]).toEqual([{ kind: 'exact', token: 'lyonnais' }])
  })

  test('past 256 expansions in one query, the rest are scanned', () => {
    const prefixes = ['alpha', 'bravo', 'charl', 'delta', 'echos']
    const vocabulary = new Map(prefixes.map((p) => [p, Array.from({ length: 60 }, (_, i) => `${p}${i}`)]))
    const compiled = compileTerms(parseQuery(prefixes.join(' ')) as Term[], vocabulary)
    expect(compiled.all.map((group) => group.length)).toEqual([60, 60, 60, 60, 1])
    expect(compiled.all[4]).toEqual([{ kind: 'scanned-prefix', token: 'echos' }])
  })

  test('the vocabulary keeps words past the indexed prefixes, read by range', () => {
    expect(vocabularyWords(['abcd', 'abcde', 'नमस्ते'])).toEqual(['abcde', 'नमस्ते'])
    const { from, to } = vocabularyRange('lyon')
    for (const word of ['lyon', 'lyonnais', 'lyon\u{10fffe}']) expect(word >= from && word < to).toBe(true)
    for (const word of ['lyom', 'lyoo', 'lyn']) expect(word >= from && word < to).toBe(false)
  })

  test('a phrase holds its tokens one after another in one source', () => {
    expect(holdsPhrase(tokensOf('a weekend, in Lyon'), ['weekend', 'in', 'lyon'])).toBe(true)
    expect(holdsPhrase(tokensOf('weekend in the Lyon'), ['weekend', 'in', 'lyon'])).toBe(false)
    expect(holdsPhrase(tokensOf('我住在东京都'), ['东京', '京都'])).toBe(true)
  })
})

describe('snippets', () => {
  const filler = (n: number) => Array.from({ length: n }, (_, i) => `filler${i % 10}`).join(' ')

  test('a short source is shown whole, whitespace collapsed, with prefixes marked where they match', () => {
    const snippet = snippetOf('lyo caf', message('We  spent\n\na weekend in Lyon at the Café.'))
    expect(snippet).toEqual({
      messageId: 'm1',
      attachmentId: null,
      snippet: 'We spent a weekend in Lyon at the Café.',
      highlights: [
        [22, 25],
        [34, 37],
      ],
    })
    expect(marked(snippet)).toEqual(['Lyo', 'Caf'])
  })

  test('a long source is cut at word boundaries around its best window, with ellipses, within 200 units', () => {
    const text = `${filler(60)} we spent a weekend in Lyon at the café ${filler(60)} Lyon again ${filler(20)}`
    const snippet = snippetOf('lyon café', message(text))
    expect(snippet?.snippet.length).toBeLessThanOrEqual(snippetLength)
    expect(snippet?.snippet).toStartWith('…filler')
    expect(snippet?.snippet).toEndWith('…')
    expect(snippet?.snippet).toContain('we spent a weekend in Lyon at the café')
    expect(marked(snippet)).toEqual(['Lyon', 'café'])
    // About a quarter window of context before the first match.
    expect(snippet?.snippet.indexOf('we spent')).toBeGreaterThan(30)
    // Every cut falls between words.
    const inner = snippet?.snippet.slice(1, -1) ?? ''
    expect(text).toContain(inner)
    expect(` ${text} `).toContain(` ${inner} `)
  })

  test('near the end of a source the window fills backwards; at the start it needs no leading ellipsis', () => {
    const end = snippetOf('lyon', message(`${filler(80)} Lyon`))
    expect(end?.snippet).toStartWith('…')
    expect(end?.snippet).toEndWith('Lyon')
    expect(end?.snippet.length).toBeGreaterThan(180)
    const start = snippetOf('lyon', message(`Lyon ${filler(80)}`))
    expect(start?.snippet).toStartWith('Lyon filler0')
    expect(start?.snippet).toEndWith('…')
  })

  test('a word longer than the window is cut between characters, never inside an emoji or before a mark', () => {
    const word = `Lyon${'😀e\u0301'.repeat(100)}`
    const snippet = snippetOf('lyon', message(`before ${word} after`))
    const text = snippet?.snippet ?? ''
    expect(text.length).toBeLessThanOrEqual(snippetLength)
    expect(text).toEndWith('…')
    const cut = text.slice(0, -1)
    expect(cut.isWellFormed()).toBe(true)
    expect(`before ${word}`).toContain(cut.replace(/^…/, ''))
    expect(cut.at(-1)).toBe('\u0301')
  })

  test('the source with the most distinct terms wins, the first in order on a tie; the name is a last resort', () => {
    const sources: SnippetSource[] = [
      message('only lyon here', 'm3'),
      message('lyon and the museum', 'm2'),
      message('the museum in lyon, again', 'm1'),
      { messageId: 'm1', attachmentId: 'f1', text: 'lyon museum guide' },
      { messageId: null, attachmentId: null, text: 'Lyon museum' },
    ]
    expect(snippetOf('lyon museum', ...sources)).toMatchObject({ messageId: 'm2', attachmentId: null })
    expect(snippetOf('guide', ...sources)).toMatchObject({ messageId: 'm1', attachmentId: 'f1' })
    expect(snippetOf('"lyon museum"', ...sources)).toMatchObject({ messageId: 'm1', attachmentId: 'f1' })
    expect(snippetOf('lyon museum', message('nothing', 'm9'), sources[4] as SnippetSource)).toMatchObject({
      messageId: null,
      attachmentId: null,
      snippet: 'Lyon museum',
    })
  })

  test('with no source holding a term, the start of the first source, marked nowhere', () => {
    expect(snippetOf('zebra', message(`${filler(50)}`, 'newest'), message('older'))).toEqual({
      messageId: 'newest',
      attachmentId: null,
      snippet: expect.stringMatching(/^filler0 filler1 .*…$/),
      highlights: [],
    })
    expect(buildSnippet([], parseQuery('zebra') ?? [])).toBeNull()
  })

  test('highlights are UTF-16 ranges: after emoji, around combining marks, whole phrases and runs, merged', () => {
    const emoji = snippetOf('cafe', message('😀😀 cafe\u0301 and Café'))
    expect(emoji?.highlights).toEqual([
      [5, 10],
      [15, 19],
    ])
    expect(marked(emoji)).toEqual(['cafe\u0301', 'Café'])
    // A prefix ending at a base letter keeps its mark.
    expect(marked(snippetOf('caf', message('cafe\u0301')))).toEqual(['caf'])
    expect(marked(snippetOf('cafe', message('cafe\u0301')))).toEqual(['cafe\u0301'])
    expect(marked(snippetOf('"weekend in lyon"', message('a Weekend in Lyon!')))).toEqual(['Weekend in Lyon'])
    expect(marked(snippetOf('东京', message('我住在东京都')))).toEqual(['东京'])
    expect(marked(snippetOf('东京都', message('我住在东京都')))).toEqual(['东京都'])
    // A word and a prefix of it mark the word once.
    expect(snippetOf('caf "café"', message('Café'))?.highlights).toEqual([[0, 4]])
  })

  test('property: each highlight, sliced from the snippet, folds to a term of the query', () => {
    // A fixed seed: the same cases every run, with each failure reproducible.
    let seed = 39
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return seed / 2 ** 31
    }
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T
    const words = [
      'Lyon',
      'café',
      'cafe\u0301',
      'Straße',
      'naïve',
      '😀',
      'x',
      'weekend',
      'Ｌｙｏｎ',
      '东京都',
      'สวัสดี',
      'नमस्ते',
      'Ærø',
      '🥰great',
      'a',
      '\n',
      'in',
    ]
    for (let round = 0; round < 400; round++) {
      const text = Array.from({ length: 5 + Math.floor(random() * 120) }, () => pick(words)).join(
        pick([' ', ', ', '  ']),
      )
      const tokens = searchTokens(text)
      if (tokens.length === 0) continue
      const chosen = pick(tokens)
      // A prefix is cut from a word; runs without spaces are searched by pairs of whole characters instead.
      const spaced = !/[\p{sc=Han}\p{sc=Thai}]/u.test(text.slice(chosen.start, chosen.end))
      const kind = pick(spaced ? (['prefix', 'word', 'phrase'] as const) : (['word', 'phrase'] as const))
      const at = tokens.indexOf(chosen)
      const next = tokens[at + 1]
      const q =
        kind === 'phrase' && next
          ? `"${text.slice(chosen.start, next.end)}"`
          : kind === 'prefix'
            ? text.slice(chosen.start, chosen.start + Math.max(2, Math.ceil((chosen.end - chosen.start) / 2)))
            : `"${text.slice(chosen.start, chosen.end)}"`
      const terms = parseQuery(q)
      const term = terms?.length === 1 ? terms[0] : undefined
      if (!term) continue
      const snippet = buildSnippet([message(text)], [term])
      if (!snippet?.highlights.length) throw new Error(`nothing marked for ${q} in ${text}`)
      expect(snippet.snippet.length).toBeLessThanOrEqual(snippetLength)
      let previous = 0
      for (const [start, end] of snippet.highlights) {
        expect(start).toBeGreaterThanOrEqual(previous)
        expect(end).toBeGreaterThan(start)
        previous = end
        const slice = snippet.snippet.slice(start, end)
        expect(slice.isWellFormed()).toBe(true)
        // Never before a mark: the highlight ends with its character's marks.
        expect(/^\p{M}/u.test(snippet.snippet.slice(end, end + 1))).toBe(false)
        const sliced = tokensOf(slice)
        if (term.kind === 'prefix') {
          expect(sliced).toHaveLength(1)
          expect(sliced[0]).toStartWith(term.token)
        } else if (term.kind === 'word') {
          expect(sliced).toEqual([term.token])
        } else {
          // Overlapping occurrences are merged: the range starts and ends with the phrase.
          expect(sliced.slice(0, term.tokens.length)).toEqual(term.tokens)
          expect(sliced.slice(-term.tokens.length)).toEqual(term.tokens)
        }
      }
    }
  })
})

describe('phrases in a text', () => {
  test('the check of ASCII text by regular expression answers as the tokens do', () => {
    const words = ['in', 'lyon', 'weekend', 'a', 'x', '2024', 'lyonnais']
    const text = fc
      .array(
        fc.oneof(
          fc.constantFrom(...words, 'Lyon', 'IN', 'Week-end', 'café', 'ﬁne'),
          fc.constantFrom(' ', ', ', '\n', '-', '_', '.', ''),
        ),
        {
          maxLength: 12,
        },
      )
      .map((parts) => parts.join(''))
    const phrase = fc.array(fc.constantFrom(...words, 'cafe', 'fine', 'end'), { minLength: 1, maxLength: 3 })
    fc.assert(
      fc.property(text, phrase, (text, phrase) => {
        expect(phraseMatcher(phrase)(text)).toBe(holdsPhrase(tokensOf(text), phrase))
      }),
      { numRuns: 2000 },
    )
    expect(phraseMatcher(['weekend', 'in', 'lyon'])('A weekend in Lyon!')).toBe(true)
    expect(phraseMatcher(['weekend', 'in', 'lyon'])('A weekend in Lyonnais')).toBe(false)
    expect(phraseMatcher(['cafe', 'au'])('Café au lait')).toBe(true)
    expect(phraseMatcher(['東京', '京都'])('我住在东京都, 東京都')).toBe(true)
  })
})

describe('the ASCII shortcuts', () => {
  // A fixed seed, as above: ASCII words with shared prefixes, digits, case and punctuation between them.
  let seed = 7
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
    return seed / 2 ** 31
  }
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T
  const words = ['mark', 'Markdown', 'MARKER', 'remark', 'mar', 'to', 'tomato', 'x2', '2x', 'it', "it's", 'bookmark']
  const texts = Array.from({ length: 300 }, () =>
    Array.from({ length: 1 + Math.floor(random() * 40) }, () => pick(words)).join(pick([' ', ', ', '\n', '-', '. '])),
  )

  test('an ASCII text has the tokens the Unicode rules give it', () => {
    // A non-ASCII word at the end takes a text the general way; it adds its one token and moves no other.
    for (const text of texts) expect(searchTokens(text)).toEqual(searchTokens(`${text} é`).slice(0, -1))
  })

  test('an ASCII text without phrases is searched directly, with the hits its tokens give', () => {
    for (const text of texts) {
      const q = [pick(words), pick(words), `"${pick(words)}"`].join(' ')
      const terms = (parseQuery(q) ?? []).filter((term) => term.kind !== 'phrase')
      expect({ q, text, hits: asciiHits(text, terms) }).toEqual({ q, text, hits: tokenHits(text, terms) })
    }
  })
})

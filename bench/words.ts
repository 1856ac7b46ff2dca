// Deterministic text for the benchmark: a seeded PRNG and a vocabulary whose word frequencies follow
// a Zipf-like law, so full-text search sees the skew of real language (a few words everywhere, a long
// tail of rare ones) and term classes (common, mid, rare) mean something.

/** Mulberry32: tiny, fast and good enough for data generation; the same seed gives the same database. */
export function prng(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// The head of the distribution is real English, in roughly its real order, so messages read like text.
const head = `the of and to a in is you that it for i on with as be this are was have not but or can
what your at we from by if they an will do all my so there one about which would more how when use like
just some out up time get also make no can't other into than then them could only its new because any
these first well way even want need think know see good could should here now very help data work model
code file example question answer thanks sure please different between each through over where while
after before same those still without both few many much such most own right long small large great
system user value function error test result change issue case point group number part place thing
problem project step list line table page report plan idea team book trip city train weekend garden
recipe kitchen budget meeting email draft review summary version feature release server client request
response token stream search index query cache memory thread message update design layout color image
document travel hotel flight museum river mountain coffee lunch dinner market music movie story history
science health sleep exercise weather morning evening tomorrow yesterday today week month year`
  .split(/\s+/)
  .filter(Boolean)

const onsets = ['b', 'c', 'd', 'f', 'g', 'h', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'z', 'br', 'st', 'tr', 'pl']
const vowels = ['a', 'e', 'i', 'o', 'u', 'ai', 'ou', 'ie']
const codas = ['', 'n', 'r', 's', 'l', 'm', 'nd', 'st', 'ck', 'x']

/** A vocabulary of `size` distinct words, most frequent first. */
export function vocabulary(size: number): string[] {
  const words = [...new Set(head)]
  const seen = new Set(words)
  const random = prng(7)
  while (words.length < size) {
    const syllables = 2 + Math.floor(random() * 3)
    let word = ''
    for (let i = 0; i < syllables; i++) {
      word += onsets[Math.floor(random() * onsets.length)]
      word += vowels[Math.floor(random() * vowels.length)]
      if (i === syllables - 1 || random() < 0.3) word += codas[Math.floor(random() * codas.length)]
    }
    if (!seen.has(word)) {
      seen.add(word)
      words.push(word)
    }
  }
  return words
}

/** Draws ranks (0 = most frequent) with probability proportional to 1 / (rank + 1)^exponent. */
export function zipfSampler(size: number, exponent: number, random: () => number): () => number {
  const cumulative = new Float64Array(size)
  let total = 0
  for (let rank = 0; rank < size; rank++) {
    total += 1 / (rank + 1) ** exponent
    cumulative[rank] = total
  }
  return () => {
    const target = random() * total
    let low = 0
    let high = size - 1
    while (low < high) {
      const middle = (low + high) >>> 1
      if ((cumulative[middle] as number) < target) low = middle + 1
      else high = middle
    }
    return low
  }
}

/** Sentences of Zipf-distributed words with capitals and punctuation, `count` words long. */
export function textOf(words: string[], count: number, rank: () => number, random: () => number): string {
  let out = ''
  let sentence = 0
  for (let i = 0; i < count; i++) {
    let word = words[rank()] as string
    if (sentence === 0) word = word.charAt(0).toUpperCase() + word.slice(1)
    sentence++
    out += word
    if (i === count - 1) out += '.'
    else if (sentence > 6 && random() < 0.15) {
      out += random() < 0.85 ? '. ' : '? '
      sentence = 0
    } else out += random() < 0.06 ? ', ' : ' '
  }
  return out
}

/** Common words of Chinese and Japanese, which are written without spaces. */
const cjkWords =
  `东京 北京 上海 大阪 会议 项目 报告 预算 设计 数据 模型 问题 答案 测试 版本 发布 服务器 客户端 请求 响应 文件
图片 文档 旅行 酒店 航班 博物馆 咖啡 午饭 晚饭 市场 音乐 电影 故事 历史 科学 健康 睡眠 运动 天气 早上 晚上 明天 昨天 今天
我们 你们 他们 因为 所以 但是 已经 可以 需要 知道 東京都 会議室 予算案 設計書 旅行記 ありがとう よろしく お願い します 確認
資料 週末 京都 温泉 新幹線`
    .split(/\s+/)
    .filter(Boolean)

/** A sentence of `count` such words, without spaces, ending with a full stop. */
export function cjkText(count: number, random: () => number): string {
  let out = ''
  for (let i = 0; i < count; i++) out += cjkWords[Math.floor(random() * cjkWords.length)]
  return `${out}。`
}

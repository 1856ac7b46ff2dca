// The web's site-wide routes, mounted once from src/app.ts rather than by every feature that renders a page: the
// stylesheet and the copy script every settings and administration page may load. Served from this process only
// (CSP `'self'`); nothing is fetched from another origin. Unknown web addresses are answered by the error pages
// (errors.tsx), since they match no route here or anywhere.
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { copyScriptPath } from './components'
import { stylesheetPath } from './layout'

const stylesheet = Bun.file(join(import.meta.dir, 'styles.css'))
const copyScript = Bun.file(join(import.meta.dir, 'assets/copy.js'))

export const siteRoutes = () =>
  new Elysia({ name: 'site' })
    .get(stylesheetPath, () => new Response(stylesheet, { headers: { 'content-type': 'text/css; charset=utf-8' } }), {
      detail: { hide: true },
    })
    .get(
      copyScriptPath,
      () => new Response(copyScript, { headers: { 'content-type': 'text/javascript; charset=utf-8' } }),
      { detail: { hide: true } },
    )

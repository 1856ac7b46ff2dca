// The web's site-wide routes, mounted once from src/app.ts rather than by every feature that renders a page: the
// stylesheet, the copy script of the settings and administration pages, the chat's bundled scripts
// (client-assets.ts) and the icon. Served from this process only (CSP `'self'`); nothing is fetched from another
// origin. Unknown web addresses are answered by the error pages (errors.tsx), since they match no route here or
// anywhere.
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { notFound } from '../shared/errors'
import { clientAssetAt } from './client-assets'
import { copyScriptPath } from './components'
import { stylesheetPath } from './layout'

const stylesheet = Bun.file(join(import.meta.dir, 'styles.css'))
const icon = Bun.file(join(import.meta.dir, 'icon.svg'))
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
    .get(
      '/assets/client/:file',
      async ({ params }) => {
        const asset = await clientAssetAt(`/assets/client/${params.file}`)
        if (!asset) throw notFound('Script')
        // The name changes with the bytes, so a browser may keep this one for good.
        const headers = {
          'content-type': 'text/javascript; charset=utf-8',
          'cache-control': 'public, max-age=31536000, immutable',
        }
        return new Response(asset.bytes, { headers })
      },
      { detail: { hide: true } },
    )
    // Browsers ask for it on every page; a 404 there is an error in every console.
    .get('/favicon.ico', () => new Response(icon, { headers: { 'content-type': 'image/svg+xml' } }), {
      detail: { hide: true },
    })

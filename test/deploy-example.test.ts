// The several-instances deployment example (deploy/compose.instances.yml and its Caddyfile) cannot be run here, with
// no container engine: what can be checked is. The instances' environment is one the server accepts and the
// configuration reference documents, the files it builds from and mounts exist, the health checks and the proxy use
// the routes that exist for them, and, where Caddy is installed, Caddy accepts the proxy's configuration.
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { loadConfig } from '../src/config'

const root = resolve(import.meta.dir, '..')
const deploy = join(root, 'deploy')

interface Service {
  image?: string
  build?: { context: string; dockerfile: string }
  environment?: Record<string, string>
  healthcheck?: { test: string[] }
  volumes?: (string | { target: string })[]
  depends_on?: Record<string, { condition: string }>
}

const compose = Bun.YAML.parse(readFileSync(join(deploy, 'compose.instances.yml'), 'utf8')) as {
  services: Record<string, Service>
}
const instances = Object.entries(compose.services).filter(([, service]) => service.build)
const caddyfile = readFileSync(join(deploy, 'Caddyfile'), 'utf8')

describe('deploy/compose.instances.yml', () => {
  test('two instances, built from the repository, with the same environment', () => {
    expect(instances.map(([name]) => name)).toEqual(['threadhouse-1', 'threadhouse-2'])
    for (const [, service] of instances) {
      const build = service.build as NonNullable<Service['build']>
      expect(existsSync(join(deploy, build.context, build.dockerfile))).toBe(true)
      expect(service.environment).toEqual(instances[0]?.[1].environment)
    }
  })

  test('the second instance starts once the first is healthy: the first run happens once, on the first', () => {
    expect(compose.services['threadhouse-2']?.depends_on?.['threadhouse-1']?.condition).toBe('service_healthy')
  })

  test('the environment is one the server accepts, on PostgreSQL and S3, with every variable documented', () => {
    const environment = instances[0]?.[1].environment ?? {}
    const config = loadConfig(environment)
    expect(config.DATABASE_URL).toStartWith('postgres://')
    expect(config.S3_BUCKET).toBe('threadhouse')
    expect(config.TRUST_PROXY).toBe(true)
    const reference = readFileSync(join(root, 'docs/configuration.md'), 'utf8')
    const undocumented = Object.keys(environment).filter((name) => !reference.includes(`| \`${name}\``))
    expect(undocumented).toEqual([])
  })

  test('the bucket the instances use is the one the one-shot service creates, before they start', () => {
    const created = compose.services['create-bucket']
    expect(JSON.stringify(created)).toContain(`store/${instances[0]?.[1].environment?.S3_BUCKET}`)
    expect(instances[0]?.[1].depends_on?.['create-bucket']?.condition).toBe('service_completed_successfully')
  })

  test('instances are checked on /healthz, the proxy routes to both and only to ready ones (/readyz)', () => {
    // Every word of the command a string: a YAML plain scalar holding `: ` would turn into a mapping.
    const healthcheck = instances[0]?.[1].healthcheck?.test ?? []
    expect(healthcheck.every((word) => typeof word === 'string')).toBe(true)
    expect(healthcheck.join(' ')).toContain('/healthz')
    expect(caddyfile).toContain('health_uri /readyz')
    expect(caddyfile).toMatch(/reverse_proxy threadhouse-1:3000 threadhouse-2:3000/)
    // No sticky sessions, and streams written through as they come.
    expect(caddyfile).not.toMatch(/lb_policy (cookie|ip_hash|client_ip_hash|header)/)
    expect(caddyfile).toContain('flush_interval -1')
  })

  test('the files the proxy mounts exist', () => {
    const mounts = (compose.services.proxy?.volumes ?? []).flatMap((volume) =>
      typeof volume === 'string' && volume.startsWith('./') ? [volume.split(':')[0] as string] : [],
    )
    expect(mounts).toEqual(['./Caddyfile'])
    for (const mount of mounts) expect(existsSync(join(deploy, mount))).toBe(true)
  })

  test.skipIf(!Bun.which('caddy'))('Caddy accepts the Caddyfile (where Caddy is installed)', () => {
    const result = Bun.spawnSync(['caddy', 'validate', '--adapter', 'caddyfile', '--config', join(deploy, 'Caddyfile')])
    expect({ code: result.exitCode, stderr: result.exitCode === 0 ? '' : result.stderr.toString() }).toEqual({
      code: 0,
      stderr: '',
    })
  })
})

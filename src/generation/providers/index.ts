// Picks the generator the worker runs, from the settings it was started with. Each provider's module is loaded
// only when it is the one configured: the two SDKs are most of what a worker would otherwise
// spend starting, and the echo responder needs none of them.
import type { BlobStore } from '../../storage/blobs'
import type { Generator, ProviderSettings } from '../types'
import { echoGenerator } from './echo'

/** `blobs` is where real models read attachments from; the echo responder only names them. */
export async function createGenerator(settings: ProviderSettings, blobs: BlobStore): Promise<Generator> {
  switch (settings.provider) {
    case 'echo':
      return echoGenerator(settings.echoTokenDelayMs)
    case 'openai': {
      const [{ modelGenerator }, { openaiModel }] = await Promise.all([import('./model'), import('./openai')])
      return modelGenerator(openaiModel(settings), settings, blobs)
    }
    case 'anthropic': {
      const [{ modelGenerator }, { anthropicModel }] = await Promise.all([import('./model'), import('./anthropic')])
      return modelGenerator(anthropicModel(settings), settings, blobs)
    }
  }
}

// Picks the generator the worker runs, from the settings it was started with.
import type { BlobStore } from '../../storage/blobs'
import type { Generator, ProviderSettings } from '../types'
import { anthropicModel } from './anthropic'
import { echoGenerator } from './echo'
import { modelGenerator } from './model'
import { openaiModel } from './openai'

/** `blobs` is where real models read attachments from; the echo responder only names them. */
export function createGenerator(settings: ProviderSettings, blobs: BlobStore): Generator {
  switch (settings.provider) {
    case 'echo':
      return echoGenerator(settings.echoTokenDelayMs)
    case 'openai':
      return modelGenerator(openaiModel(settings), settings, blobs)
    case 'anthropic':
      return modelGenerator(anthropicModel(settings), settings, blobs)
  }
}

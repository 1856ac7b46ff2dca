// Picks the generator the worker runs, from the settings it was started with.
import type { Generator, ProviderSettings } from '../types'
import { anthropicModel } from './anthropic'
import { echoGenerator } from './echo'
import { modelGenerator } from './model'
import { openaiModel } from './openai'

export function createGenerator(settings: ProviderSettings): Generator {
  switch (settings.provider) {
    case 'echo':
      return echoGenerator(settings.echoTokenDelayMs)
    case 'openai':
      return modelGenerator(openaiModel(settings), settings)
    case 'anthropic':
      return modelGenerator(anthropicModel(settings), settings)
  }
}

import type { Generator, ProviderSettings } from '../types'
import { echoGenerator } from './echo'

export function createGenerator(settings: ProviderSettings): Generator {
  switch (settings.provider) {
    case 'echo':
      return echoGenerator(settings.echoTokenDelayMs)
  }
}

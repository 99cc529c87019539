/**
 * The parts of undici the gateway client uses (an Agent, a handler to decorate, `request`), loaded
 * without undici's index: that loads every API undici has (fetch, WebSocket, cookies, mocks,
 * caches), a large share of a one-document run's CPU (docs/benchmarks.md, "a ninth session").
 * undici has no `exports` map, so these paths are what its index itself loads.
 */
import type { Dispatcher } from 'undici';
import dispatcherRequest from 'undici/lib/api/api-request.js';

export { default as Agent } from 'undici/lib/dispatcher/agent.js';
export { default as DecoratorHandler } from 'undici/lib/handler/decorator-handler.js';

export type RequestOptions = Omit<Dispatcher.RequestOptions, 'origin' | 'path'> & {
  readonly dispatcher: Dispatcher;
};

/** undici's `request(url, { dispatcher, … })`. */
export function request(
  url: string,
  { dispatcher, ...options }: RequestOptions,
): Promise<Dispatcher.ResponseData> {
  const { origin, pathname, search } = new URL(url);
  return dispatcherRequest.call(dispatcher, { ...options, origin, path: `${pathname}${search}` });
}

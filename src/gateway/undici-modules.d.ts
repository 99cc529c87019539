// The undici modules the gateway client loads one by one (undici-parts.ts), typed as undici's
// index exports them.
declare module 'undici/lib/dispatcher/agent.js' {
  import type { Agent } from 'undici';

  const AgentClass: typeof Agent;
  export default AgentClass;
}

declare module 'undici/lib/handler/decorator-handler.js' {
  import type { DecoratorHandler } from 'undici';

  const DecoratorHandlerClass: typeof DecoratorHandler;
  export default DecoratorHandlerClass;
}

declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';

  /** Dispatcher.prototype.request, called on a dispatcher. */
  function request(this: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>;
  export default request;
}

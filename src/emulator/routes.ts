import type { Route } from './context.js';
import { HttpError } from './http.js';
import { embeddings, transcriptions } from './inference.js';
import { membersPage } from './members.js';

/** The spec's endpoints, by method and spec path (without /v1), with who may call them. */
const ROUTES: Readonly<Record<string, Route>> = {
  'POST /embeddings': { access: 'inference', handle: embeddings },
  'POST /audio/transcriptions': { access: 'inference', handle: transcriptions },
  'GET /embeddings/models': {
    access: 'any',
    handle: ({ state }) => ({ status: 200, body: { data: state.models.listing() } }),
  },
  'GET /organization/members': {
    access: 'management',
    handle: ({ state, query }) => ({ status: 200, body: membersPage(state.members, query) }),
  },
};

/** The route, or 405 for a known path with another method, 404 for the rest (and anything outside /v1). */
export function findRoute(method: string, path: string | undefined, pathname: string): Route {
  const route = path === undefined ? undefined : ROUTES[`${method} ${path}`];
  if (route) return route;
  if (path !== undefined && Object.keys(ROUTES).some((key) => key.endsWith(` ${path}`))) {
    throw new HttpError(405, `Method ${method} is not allowed on ${pathname}`);
  }
  throw new HttpError(404, `No such endpoint: ${method} ${pathname}`);
}

# embedpipe: one image for every role (gateway emulator, producer, worker); the command picks it.
#   docker build -t embedpipe .
#   docker run --rm embedpipe --help

# ---- build: compile TypeScript, then drop the dev dependencies -------------------------------------
FROM node:20-bookworm-slim AS build
WORKDIR /app

# Dependencies first, so editing the source reuses this layer.
# `npm install` on the committed lock, not `npm ci`: ci refuses this lock, which lacks other
# platforms' optional binaries (see .ci/run). --ignore-scripts because the package's `prepare`
# (a build) would run before the source is here; the only dependency with an install script,
# msgpackr-extract, ships its prebuilt binary as a package and needs none.
COPY package.json package-lock.json ./
RUN npm install --no-audit --no-fund --ignore-scripts

COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# ---- runtime ---------------------------------------------------------------------------------------
FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production
# glibc's malloc is left at its defaults: a fixed MALLOC_MMAP_THRESHOLD_ lowers peak RSS ~10% but
# maps every large buffer afresh, and page faults made runs 45-67% more CPU (docs/benchmarks.md, "Memory").
WORKDIR /app

# Root-owned and so read-only for the `node` user that runs the tool.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY jobs ./jobs
# The demo job's corpus (jobs/demo.json reads ../examples/demo/articles.csv).
COPY examples ./examples

# A named volume mounted here starts as a copy of this folder, ownership included: writable by `node`.
RUN mkdir -p /data/out && chown node:node /data/out

USER node
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["--help"]

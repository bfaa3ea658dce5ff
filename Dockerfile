# syntax=docker/dockerfile:1
# `coderl serve` as an image: the lab's scorer over HTTP for cluster RL trainers (docs/deploy.md).
#
#   docker build -t coderl-serve .
#   docker run --rm -p 8000:8000 -e CODERL_SERVE_TOKEN=... coderl-serve
#
# Stage `build` installs every dependency and bundles the CLI and its two sandbox workers with
# esbuild (npm packages stay external). The final stage holds the production dependencies
# (QuickJS, Pyodide with its wasm and standard library, tree-sitter, ESLint: all a run loads, so
# nothing is fetched at run time), the bundles, the launcher and the benchmark suites, and runs as
# an unprivileged user on a tree it cannot write (it writes nothing: readOnlyRootFilesystem works).
# Beyond loopback the server refuses to start without a token (exit 2): set CODERL_SERVE_TOKEN.
ARG NODE_VERSION=20

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# no install script is needed to bundle: esbuild's binary comes as its platform package
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY bin ./bin
COPY src ./src
COPY shaders ./shaders
COPY bench ./bench
# bin/coderl.mjs's bundleCli writes cli.mjs and sandbox-worker.mjs; /run_code's worker is bundled beside
# them, where src/sandbox/program-pool.node.ts looks first (a prebuilt CLI builds nothing at run time)
RUN node --input-type=module -e "const { bundleCli } = await import('./bin/coderl.mjs'); await bundleCli('/out/cli.mjs');" \
 && npx esbuild src/sandbox/program.worker.ts --bundle --platform=node --format=esm --target=node20 \
      --packages=external --sourcemap=inline --log-level=error --outfile=/out/program-worker.mjs

FROM node:${NODE_VERSION}-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /out/ ./dist/
COPY bin ./bin
COPY data/benchmarks ./data/benchmarks
RUN ln -s /app/bin/coderl.mjs /usr/local/bin/coderl
# the launcher runs this bundle as it is (no esbuild, no sources); the benchmarks are found above it
ENV CODERL_BUNDLE=/app/dist/cli.mjs
# the image's `node` user, by number: Kubernetes' runAsNonRoot can check a numeric user only
USER 1000:1000
EXPOSE 8000
# what coderl serve drains on: /readyz turns 503, requests in flight finish, then exit 0
STOPSIGNAL SIGTERM
ENTRYPOINT ["coderl"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]

# syntax=docker/dockerfile:1

# Build: generate the templ views with the templ version go.mod pins, then build parley
# and parley-guard.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go install "github.com/a-h/templ/cmd/templ@$(go list -m -f '{{.Version}}' github.com/a-h/templ)" \
 && templ generate \
 && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/parley ./cmd/parley \
 && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/parley-guard ./cmd/parley-guard

# Runtime: Node for the Claude Code CLI, which parley runs as `claude`.
FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git \
 && rm -rf /var/lib/apt/lists/* \
 && npm install -g @anthropic-ai/claude-code@2.1.328 \
 && npm cache clean --force \
 && mkdir -m 0711 /data
COPY --from=build /out/parley /usr/local/bin/parley
# The small supervisor each live session keeps (package guard alone); parley
# finds it beside itself and falls back to its own `parley run-guard`.
COPY --from=build /out/parley-guard /usr/local/bin/parley-guard
# The entrypoint makes this container's cgroup file system, mounted read-only,
# writable when the container has CAP_SYS_ADMIN (docker-compose.yml), so each
# run gets a cgroup of its own; in a private cgroup namespace (Docker's default
# on cgroup v2) it holds only this container's subtree. Without the capability
# the remount fails quietly and Parley warns that runs get no cgroup.
RUN printf '%s\n' '#!/bin/sh' \
      'grep -E " - cgroup2? " /proc/self/mountinfo | cut -d" " -f5 | while read -r dir; do' \
      '  mount -o remount,rw "$dir" 2>/dev/null || mount -o remount,bind,rw "$dir" 2>/dev/null || :' \
      'done' \
      'exec parley "$@"' > /usr/local/bin/parley-entrypoint \
 && chmod 0755 /usr/local/bin/parley-entrypoint
# Parley runs as root so that each project's claude runs as a uid of its own
# (PARLEY_UID_RANGE); claude itself never runs as root. docker-compose.yml
# drops every capability but the few this needs (docs/security.md, Docker). The embedded PostgreSQL
# fallback cannot run as root: use DATABASE_URL (the compose file does).
ENV PARLEY_ADDR=:8080 PARLEY_DATA_DIR=/data
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["parley-entrypoint", "serve"]

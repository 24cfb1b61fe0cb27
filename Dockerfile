# syntax=docker/dockerfile:1

# Build: generate the templ views with the templ version go.mod pins, then build parley.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go install "github.com/a-h/templ/cmd/templ@$(go list -m -f '{{.Version}}' github.com/a-h/templ)" \
 && templ generate \
 && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/parley ./cmd/parley

# Runtime: Node for the Claude Code CLI, which parley runs as `claude`.
FROM node:20-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git \
 && rm -rf /var/lib/apt/lists/* \
 && npm install -g @anthropic-ai/claude-code@2.1.328 \
 && npm cache clean --force \
 && mkdir /data && chown node:node /data
COPY --from=build /out/parley /usr/local/bin/parley
# Not root: claude refuses some modes as root, and the embedded Postgres fallback cannot run as root.
USER node
ENV PARLEY_ADDR=:8080 PARLEY_DATA_DIR=/data
VOLUME /data
EXPOSE 8080
ENTRYPOINT ["parley", "serve"]

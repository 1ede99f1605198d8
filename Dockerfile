# sluice: one image for the shell, `sluice scheduler`, `sluice executor`
# and `sluice serve`.
#
#   docker build -t sluice --build-arg VERSION=$(git describe --tags --always --dirty) \
#                          --build-arg COMMIT=$(git rev-parse HEAD) .
#
# The build context has no .git (see .dockerignore), so the version and
# commit --version prints come in as build arguments.

# Build stage: the SQL parser (pg_query_go) is C, so cgo and gcc are
# needed; the golang image has both.
FROM golang:1.26-trixie AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
RUN CGO_ENABLED=1 go build -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X runtime.godebugDefault=madvdontneed=0" \
      -o /out/sluice . \
 && /out/sluice --version

# Runtime stage: the binary links glibc (cgo), so a slim Debian of the
# same release as the build image; CA certificates for https object
# stores; a non-root user whose home holds work directories.
FROM debian:trixie-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --create-home --home-dir /var/lib/sluice sluice
COPY --from=build /out/sluice /usr/local/bin/sluice
USER sluice
WORKDIR /var/lib/sluice
# Scheduler gRPC; executor control and Flight; Flight SQL (by the
# conventions of docker-compose.yml; every port is a flag).
EXPOSE 50050 50051 50052 50060
ENTRYPOINT ["sluice"]

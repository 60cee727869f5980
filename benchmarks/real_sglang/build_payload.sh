#!/bin/bash
# Builds what a GPU machine without network needs to run real SGLang 0.5.17 and the workbench against it,
# on a machine that reaches PyPI:  bash benchmarks/real_sglang/build_payload.sh [DEST]   (default .sgl)
#
#   DEST/sgl017_payload.tar.xz   site/ : the ~35 wheels `sglang.launch_server` imports for Llama and EAGLE-3
#                                (sglang 0.5.17, sglang-kernel 0.4.5's sm90 ops without FA3/sm100/FlashMLA,
#                                flashinfer's Python package, transformers 5.12.1, ...), the workbench's own
#                                dependencies the GPU image lacks (paramiko and its four), and import
#                                stand-ins for IPython and xgrammar (pystubs/). About 45 MB.
#   DEST/real_sglang/            the model configs, tokenizer builder and stand-in writer (this folder).
#
# DEST is ignored by git (.gitignore: /.sgl/), so it travels to the GPU machine only when named in `carry`.
# The pins: sglang 0.5.17 is the newest release that pins torch==2.11.0 (the GPU image's torch); its kernel
# package 0.4.5 is a CUDA 13 build; the image's transformers 5.17 breaks sglang 0.5.17's config registry.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=$(mkdir -p "${1:-.sgl}" && realpath "${1:-.sgl}")
PY=${PYTHON:-python3}
if [ -f "$DEST/sgl017_payload.tar.xz" ] && [ "$DEST/sgl017_payload.tar.xz" -nt "$HERE/build_payload.sh" ]; then
  echo "$DEST/sgl017_payload.tar.xz is up to date"; cp -r "$HERE" "$DEST/"; exit 0
fi
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
PLATFORMS=""
for p in manylinux_2_34 manylinux_2_28 manylinux_2_27 manylinux_2_26 manylinux_2_24 manylinux_2_17 manylinux2014 manylinux1 manylinux_2_5; do
  PLATFORMS="$PLATFORMS --platform ${p}_x86_64"
done
# shellcheck disable=SC2086
PIP_CONSTRAINT= "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  $PLATFORMS --platform any -d "$WORK/wheels" \
  sglang==0.5.17 sglang-kernel==0.4.5 flashinfer-python==0.6.15.post1 apache-tvm-ffi==0.1.11 \
  transformers==5.12.1 tokenizers==0.22.2 \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  fastapi==0.165.0 starlette==1.10.0 uvicorn==0.55.0 python-multipart==0.0.34 opentelemetry-api==1.45.3 \
  orjson==3.13.0 msgspec==0.23.0 pyzmq==27.3.0 pybase64==1.5.1 setproctitle==1.3.8 partial-json-parser==0.2.1.1.post7 \
  openai==2.6.1 jiter==0.19.0 distro==1.9.0 sniffio==1.3.1 \
  compressed-tensors==0.20.1 loguru==0.7.3 gguf==0.19.0 dill==0.4.1 \
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 \
  soundfile==0.13.1 cffi==2.1.1 pycparser==3.12 \
  paramiko==5.1.0 bcrypt==5.0.0 cryptography==51.0.1 pynacl==1.6.2 invoke==3.0.3
mkdir -p "$WORK/site"
for wheel in "$WORK"/wheels/*.whl; do
  case "$wheel" in
    *sglang_kernel-*)  # Python files, triton kernels, metadata and the sm90 op library only
      unzip -q -o "$wheel" -d "$WORK/site" -x 'sgl_kernel/flash_ops.abi3.so' 'sgl_kernel/flashmla_ops.abi3.so' \
        'sgl_kernel/infllm_ops*.so' 'sgl_kernel/sm100/*' ;;
    *) unzip -q -o "$wheel" -d "$WORK/site" ;;
  esac
done
cp -r "$HERE/pystubs/IPython" "$HERE/pystubs/xgrammar" "$WORK/site/"
tar -C "$WORK" -cf - site | xz -9 -T0 > "$DEST/sgl017_payload.tar.xz.part"
mv "$DEST/sgl017_payload.tar.xz.part" "$DEST/sgl017_payload.tar.xz"
rm -rf "$DEST/real_sglang"; cp -r "$HERE" "$DEST/"
ls -l "$DEST"

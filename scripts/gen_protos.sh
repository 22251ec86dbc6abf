#!/usr/bin/env bash
# Generates the Python protocol package paiju/v1/ from protos/paiju/v1/*.proto.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-"$here/.venv/bin/python"}
cd "$here"
rm -rf paiju/v1
mkdir -p paiju/v1
"$py" -m grpc_tools.protoc -Iprotos \
  --python_out=. --pyi_out=. --grpc_python_out=. \
  protos/paiju/v1/*.proto
touch paiju/v1/__init__.py

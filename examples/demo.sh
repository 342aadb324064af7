#!/usr/bin/env bash
# The demo: runner's whole pipeline — clone, sandbox, edits, check, branch —
# on a tiny repository, with the model's turns played back from a
# recording, so that no API key is needed.
#
#   bash examples/demo.sh
#
# On a fresh machine it also builds the runner binary and the sandbox image
# (from a Debian base made with mmdebstrap: no registry is needed).
# RUNNER_DEMO_DIR keeps the work in a directory of your choice;
# RUNNER_SANDBOX_IMAGE uses another sandbox image.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
work=${RUNNER_DEMO_DIR:-$(mktemp -d -t runner-demo.XXXXXX)}
mkdir -p "$work"
image=${RUNNER_SANDBOX_IMAGE:-runner-sandbox:latest}

echo "== building runner"
CGO_ENABLED=0 go build -o "$work/" ./cmd/runner ./cmd/sandbox-channel
runner="$work/runner"

if ! "$runner" image check --image "$image" >/dev/null 2>&1; then
  echo "== building the sandbox image $image (once; a few minutes)"
  # Every package Dockerfile.sandbox wants goes into the base, so the image
  # builds without network inside the build.
  packages=$(sed -n 's/^ARG PACKAGES="\(.*\)"$/\1/p' Dockerfile.sandbox | tr ' ' ',')
  base=runner-base:bookworm
  if ! docker image inspect "$base" >/dev/null 2>&1; then
    if ! command -v mmdebstrap >/dev/null 2>&1; then
      if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap
      else
        echo "the demo needs mmdebstrap to make a Debian base image: sudo apt-get install mmdebstrap" >&2
        exit 1
      fi
    fi
    mmdebstrap --variant=apt --quiet --include="$packages" bookworm - | docker import - "$base" >/dev/null
  fi
  "$runner" image build --base "$base" --tag "$image" --quiet
fi

echo "== making the demo repository in $work/repo"
rm -rf "$work/repo" "$work/out"
cp -R examples/demo/repo "$work/repo"
cp examples/demo/tasks.yaml "$work/tasks.yaml"
git -C "$work/repo" init -q -b main
git -C "$work/repo" add -A
git -C "$work/repo" -c user.name=demo -c user.email=demo@example.com commit -q -m "words: first version"

echo "== runner run (the model is a recording: no API key)"
status=0
"$runner" run "$work/tasks.yaml" --out "$work/out" --image "$image" \
  --model "replay:$PWD/examples/demo/recording.jsonl" || status=$?

echo
echo "== what the agent left on its branch (your main is untouched)"
git -C "$work/repo" log --format='%h %s%n%n%b' -1 agent/fix-word-count
git -C "$work/repo" diff main agent/fix-word-count
echo "results: $work/out/results.jsonl"
echo "trajectory: $work/out/trajectories/fix-word-count.1.jsonl"
echo "roll back: $runner rollback --out $work/out --all"
exit "$status"

#!/usr/bin/env bash
# System packages the test suite needs beyond pip's: headless Chromium, which tests/viz uses to
# render the HTML replay (Debian/Ubuntu package `chromium`). Installs it through apt when it is
# absent and this user is root or has sudo; otherwise says why the replay test will fail. Never
# fatal: without Chromium only that one test fails, with the install hint.
set -uo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
    || [ -n "${JC_CHROMIUM:-}" ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else SUDO="none"; fi
if [ "$SUDO" = "none" ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium is missing and cannot be installed here (needs apt-get and root or sudo): the" \
       "replay test will fail; install Chromium and/or set JC_CHROMIUM to its path" >&2
  exit 0
fi
echo "installing chromium for the replay test (apt-get)" >&2
{ $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium; } \
  || echo "could not install chromium: the replay test will fail" >&2
exit 0

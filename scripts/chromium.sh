#!/usr/bin/env bash
# The browser tests drive /usr/bin/chromium (Playwright cannot download its own here).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "chromium: /usr/bin/chromium is missing; install it as root: apt-get install -y chromium" >&2
    exit 1
fi
echo "chromium: installing the chromium package"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
if [ ! -x /usr/bin/chromium ]; then
    echo "chromium: the chromium package did not provide /usr/bin/chromium" >&2
    exit 1
fi

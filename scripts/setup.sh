#!/usr/bin/env bash
# The Debian packages the full test suite and the benchmarks need (`npm run setup`; .ci/run calls it).
# rowan itself runs without them: the embedded quick start needs only Node (pools map through libc
# where libpmem2 is missing: native/mapping.ts). With them:
#   libpmem2                the PM pool through libpmem2 (--persistence dax needs it)
#   libibverbs1, ibverbs-providers   the verbs transport (--fabric verbs)
#   redis-server, redis-tools        the Redis front-end tests and `npm run bench -- redis`
#   tmux                    plays the terminal for the interactive redis-cli test
#   zookeeper               the server the ZooKeeper store tests start (its jars; Java comes with it)
#   openssl                 the throwaway CA and certificates of the TLS tests
#   iproute2                network namespaces, partitions and shaped links (ip, tc)
# Installs only what is missing, so a warm machine skips apt entirely. Needs root or sudo.
set -euo pipefail
PACKAGES=(libpmem2 libibverbs1 ibverbs-providers redis-server redis-tools tmux zookeeper openssl iproute2)

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
  echo "setup: this is not a Debian/Ubuntu system (no dpkg/apt-get); install the equivalents of: ${PACKAGES[*]}" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: run as root, or install sudo" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
need=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need+=("$pkg")
done
if [ "${#need[@]}" -eq 0 ]; then
  echo "setup: every package is installed (${PACKAGES[*]})"
  exit 0
fi
echo "setup: installing Debian packages: ${need[*]}"
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${need[@]}"

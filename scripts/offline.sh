#!/usr/bin/env bash
# Run a command with no network: in a fresh network namespace that has only a loopback interface
# (root, util-linux `unshare` and iproute2 `ip`), so nothing it runs can reach another host; kernels,
# the local web server and the browser still talk over 127.0.0.1.
# Without root, fall back to proxies that point nowhere (weaker: a direct socket could still connect)
# and say so.
set -euo pipefail
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v ip >/dev/null; then
  export BOOK_OFFLINE=netns
  exec unshare --net -- bash -c 'ip link set lo up && exec "$@"' offline "$@"
fi
echo "offline.sh: not root or no unshare/ip; using dead proxies instead of a network namespace" >&2
export BOOK_OFFLINE=proxies
export HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9
export http_proxy=$HTTP_PROXY https_proxy=$HTTPS_PROXY all_proxy=$ALL_PROXY NO_PROXY=127.0.0.1,localhost
exec "$@"
